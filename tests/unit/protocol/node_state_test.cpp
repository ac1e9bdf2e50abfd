#include "node_state.hpp"
#include "node_state_file.hpp"
#include "sigbus_guard.hpp"
#include "state_dir.hpp"

#include <sys/eventfd.h>

#include <chrono>

#include "notice_fields.hpp"
#include "publisher.hpp"
#include "publisher_fields.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cstddef>
#include <cstring>
#include <functional>
#include <string>
#include <utility>

#include "fixture.hpp"

using namespace trainctl;
using trainctl_test::temp_dir;

TEST(NodeState, TwoMappingsShareOneState) {
  temp_dir t;
  node_state_file a(t / "state"), b(t / "state");
  a.get().flags.fetch_or(kFlagPreempted);
  EXPECT_EQ(b.get().flags.load() & kFlagPreempted, kFlagPreempted);
}

TEST(NodeState, OnePublisherAtATime) {
  temp_dir t;
  node_state_file a(t / "state"), b(t / "state");
  EXPECT_TRUE(a.try_become_publisher());
  EXPECT_FALSE(b.try_become_publisher());
  EXPECT_EQ(static_cast<pid_t>(b.get().publisher_id.load() >> 32), getpid());
  a.release_publisher();
  EXPECT_TRUE(b.try_become_publisher());
}

TEST(NodeState, PublisherLockPassesOnWhenItsProcessDies) {
  temp_dir t;
  const std::string path = t / "state";
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t child = trainctl_test::fork_child();
  if (child == 0) {
    node_state_file f(path);
    char c = f.try_become_publisher() ? '1' : '0';
    if (write(ready[1], &c, 1) != 1) _exit(2);
    pause();
    _exit(0);
  }
  char c = 0;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  EXPECT_EQ(c, '1');
  node_state_file me(path);
  EXPECT_FALSE(me.try_become_publisher());
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  EXPECT_TRUE(me.try_become_publisher());
  close(ready[0]);
  close(ready[1]);
}

TEST(NodeState, AHolderThatStoppedRefreshingIsTakenOverOnce) {
  temp_dir t;
  node_state_file a(t / "state"), b(t / "state"), c(t / "state");
  ASSERT_TRUE(a.try_become_publisher());
  a.get().published_ms.store(unix_now_ms());
  int from = -1;
  EXPECT_FALSE(b.try_become_publisher(nullptr, 3000, &from));  // fresh: not taken
  a.get().published_ms.store(unix_now_ms() - 10000);           // a stopped looking 10 s ago
  EXPECT_TRUE(b.try_become_publisher(nullptr, 3000, &from));
  EXPECT_EQ(from, getpid());
  EXPECT_TRUE(b.is_publisher());
  EXPECT_FALSE(a.is_publisher());                              // a learns it lost the role, though it keeps the lock
  EXPECT_FALSE(c.try_become_publisher(nullptr, 3000, &from));  // b's heartbeat is fresh
  b.release_publisher();
  EXPECT_TRUE(a.try_become_publisher());  // the lock holder takes a role nobody holds
}

// The heartbeat beats every second whatever the poll interval: a holder that stops is
// taken over 4 s later (was two poll intervals and a second: 21 s at the default 10 s);
// a holder of an older trainctl, which advertises its poll interval, keeps its 21 s.
TEST(NodeState, APublisherBeatsEverySecondAndIsStaleAfterFour) {
  temp_dir t;
  node_state_file a(t / "state");
  publisher_options o;
  o.poll_interval = std::chrono::milliseconds(10000);
  {
    publisher p(a.get(), o);
    EXPECT_EQ(a.get().publish_every_ms.load(), 1000);
    EXPECT_EQ(publisher_stale_after_ms(a.get()), 4000);
    const auto t0 = std::chrono::steady_clock::now();
    const int never = eventfd(0, EFD_CLOEXEC);
    p.wait_and_refresh(never, std::chrono::milliseconds(10000));
    close(never);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(5000))
        << "the wait ends for the heartbeat, not the 10 s poll";
  }
  o.poll_interval = std::chrono::milliseconds(100);
  { publisher p(a.get(), o); }
  EXPECT_EQ(publisher_stale_after_ms(a.get()), 3000) << "never under 3 s";
  a.get().publish_every_ms.store(10000);  // a holder of a trainctl before the heartbeat
  EXPECT_EQ(publisher_stale_after_ms(a.get()), 21000);
}

TEST(NodeState, ATruncatedFileIsDamageNotASigbus) {
  temp_dir t;
  node_state_file a(t / "state");
  a.get().flags.fetch_or(kFlagPreempted);
  EXPECT_EQ(a.damage(), "");
  ASSERT_EQ(truncate((t / "state").c_str(), 0), 0);
  // Without the guard this read kills the process with SIGBUS.
  EXPECT_EQ(valid_flags(a.get()), 0u);
  EXPECT_NE(a.damage().find("node state " + (t / "state") + " was truncated"), std::string::npos) << a.damage();
  a.get().flags.fetch_or(kFlagDeadline);  // writes land in the guard's private pages
}

namespace {
// A SIGBUS handler installed after trainctl's, as Python's faulthandler.enable() is:
// it says so on a pipe, puts back the handler it found, and raises the signal again.
int g_later_pipe = -1;
struct sigaction g_found {};
void later_handler(int sig) {
  (void)!write(g_later_pipe, "L", 1);
  sigaction(sig, &g_found, nullptr);
  raise(sig);
}
void install_later_handler(int pipe_fd) {
  g_later_pipe = pipe_fd;
  struct sigaction sa {};
  sa.sa_handler = later_handler;
  sa.sa_flags = SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGBUS, &sa, &g_found);
}
// Runs `body` in a child; its wait status, and what the later handler said on the pipe.
std::pair<int, std::string> in_child(const std::function<int(int)>& body) {
  int p[2];
  if (pipe(p) != 0) return {-1, ""};
  const pid_t child = fork();
  if (child == 0) {
    close(p[0]);
    _exit(body(p[1]));
  }
  close(p[1]);
  int status = -1;
  waitpid(child, &status, 0);
  std::string said;
  char buf[64];
  for (ssize_t n; (n = read(p[0], buf, sizeof buf)) > 0;) said.append(buf, static_cast<size_t>(n));
  close(p[0]);
  return {status, said};
}
}  // namespace

// faulthandler.enable() after the Controller was made (issue 34: all 4 Python ranks died
// of SIGBUS when their node state was truncated): before the watcher's next wake puts the
// guard first again, the later handler sees the fault, and its raise still ends in the
// guard's zero pages, not in a death.
TEST(NodeState, ATruncationSurvivesAHandlerInstalledLater) {
  temp_dir t;
  const std::string path = t / "state";
  const auto [status, said] = in_child([&](int out) {
    node_state_file a(path);
    install_later_handler(out);
    if (truncate(path.c_str(), 0) != 0) return 2;
    if (valid_flags(a.get()) != 0) return 3;
    return a.damage().find("was truncated") != std::string::npos ? 0 : 4;
  });
  ASSERT_TRUE(WIFEXITED(status)) << "died of signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(said, "L") << "the later handler saw the fault first";
}

// Re-armed, the guard is first: a truncated node state never reaches the later handler,
// and a fault anywhere else reaches it as if the guard had not been there (it raises
// again, and the process dies of SIGBUS as without trainctl).
TEST(NodeState, ReArmedTheGuardIsFirstAndPassesOtherFaultsOn) {
  temp_dir t;
  const std::string path = t / "state", other = t / "other";
  t.write("other", std::string(4096, 'x'));
  const auto [status, said] = in_child([&](int out) {
    node_state_file a(path);
    install_later_handler(out);
    if (!rearm_sigbus_guard()) return 2;
    if (rearm_sigbus_guard()) return 3;  // first already
    if (truncate(path.c_str(), 0) != 0) return 4;
    if (valid_flags(a.get()) != 0 || a.damage().empty()) return 5;
    (void)!write(out, "G", 1);  // the guard handled it alone
    const int fd = open(other.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC);
    auto* map = static_cast<volatile const char*>(mmap(nullptr, 4096, PROT_READ, MAP_SHARED, fd, 0));
    if (fd < 0 || map == MAP_FAILED || ftruncate(fd, 0) != 0) return 6;
    return map[0] == 'x' ? 7 : 8;  // faults: never returns
  });
  ASSERT_TRUE(WIFSIGNALED(status)) << "exited " << (WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  EXPECT_EQ(WTERMSIG(status), SIGBUS);
  EXPECT_EQ(said, "GL") << "the guard alone for the node state, then the later handler for the other fault";
}

// systemd-logind's RemoveIPC removes the state file while the job runs (issue 34: a
// worker torchrun restarted made a new file nobody published, missed both switches and
// ran 82.6 s past the kill switch). A process started after that shares the supervisor's
// open copy; one whose TRAINCTL_STATE_FD names a file that still has its name does not.
TEST(NodeState, ARemovedStateIsFoundThroughTheSupervisorsOpenCopy) {
  temp_dir t;
  const std::string path = t / "state";
  node_state_file sup(path);  // this process plays the supervisor
  setenv("TRAINCTL_STATE", path.c_str(), 1);
  setenv("TRAINCTL_SUPERVISOR_PID", std::to_string(getpid()).c_str(), 1);
  setenv("TRAINCTL_STATE_FD", std::to_string(sup.fd()).c_str(), 1);
  {
    node_state_file before(path);
    EXPECT_FALSE(before.adopted()) << "the name is there: opened by it";
  }
  EXPECT_FALSE(sup.removed());
  ASSERT_EQ(unlink(path.c_str()), 0);
  EXPECT_TRUE(sup.removed());
  {
    node_state_file worker(path);
    EXPECT_TRUE(worker.adopted());
    sup.get().flags.fetch_or(kFlagExitSwitch);
    EXPECT_EQ(valid_flags(worker.get()) & kFlagExitSwitch, kFlagExitSwitch) << "one state, shared";
    EXPECT_EQ(worker.damage(), "");
    worker.unlink_if_last();
  }
  trainctl_test::touch(t / "other");
  const int other = open((t / "other").c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  ASSERT_GE(other, 0);
  setenv("TRAINCTL_STATE_FD", std::to_string(other).c_str(), 1);
  {
    node_state_file fresh(path);
    EXPECT_FALSE(fresh.adopted()) << "a file that has its name is no removed state";
  }
  close(other);
  unsetenv("TRAINCTL_STATE");
  unsetenv("TRAINCTL_SUPERVISOR_PID");
  unsetenv("TRAINCTL_STATE_FD");
}

TEST(NodeState, JunkOverAStateIsDamageAndNoFlags) {
  temp_dir t;
  node_state_file a(t / "state");
  t.write("junk", std::string(sizeof(node_state), '\xff'));
  const int fd = open((t / "state").c_str(), O_WRONLY);
  ASSERT_GE(fd, 0);
  const std::string junk(sizeof(node_state), '\xff');
  ASSERT_EQ(pwrite(fd, junk.data(), junk.size(), 0), static_cast<ssize_t>(junk.size()));
  close(fd);
  EXPECT_EQ(valid_flags(a.get()), 0u);  // not "every exit reason at once"
  EXPECT_NE(a.damage().find("was overwritten"), std::string::npos) << a.damage();
}

// Random bytes after an intact header: every slot is checked, not only the header and
// the flag bits (issue 34: C ranks exited with reason kill-switch, Python ranks ignored
// the switches, and no line said anything).
TEST(NodeState, JunkPastAnIntactHeaderIsDamage) {
  temp_dir t;
  node_state_file a(t / "state");
  a.register_switch(switch_kind::exit, "kill-switch", "/x/kill");
  EXPECT_EQ(a.damage(), "") << "a state as trainctl writes it";
  const std::size_t from = offsetof(node_state, slots);
  for (unsigned seed = 1; seed <= 20; ++seed) {
    std::string junk(sizeof(node_state) - from, '\0');
    unsigned x = seed;
    for (char& c : junk) c = static_cast<char>((x = x * 1103515245u + 12345u) >> 16);
    const int fd = open((t / "state").c_str(), O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(pwrite(fd, junk.data(), junk.size(), static_cast<off_t>(from)), static_cast<ssize_t>(junk.size()));
    close(fd);
    EXPECT_NE(a.damage().find("was overwritten past its header"), std::string::npos)
        << "seed " << seed << ": " << a.damage();
  }
}

TEST(NodeState, RegisteringTheSameSwitchTwiceGivesOneSlot) {
  temp_dir t;
  node_state_file a(t / "state"), b(t / "state");
  const int s1 = a.register_switch(switch_kind::exit, "kill-switch", "/x/kill");
  const int s2 = b.register_switch(switch_kind::exit, "kill-switch", "/x/kill");
  const int s3 = b.register_switch(switch_kind::save, "save-switch", "/x/kill");
  EXPECT_EQ(s1, s2);
  EXPECT_NE(s1, s3);
  for (int i = 0; i < kMaxSlots; ++i) a.register_switch(switch_kind::save, "s", "/y/" + std::to_string(i));
  EXPECT_EQ(a.register_switch(switch_kind::save, "s", "/z"), -1);
}

TEST(NodeState, RefusesAForeignFile) {
  temp_dir t;
  t.write("state", std::string(sizeof(node_state), 'x'));
  EXPECT_THROW(node_state_file(t / "state"), std::runtime_error);
  t.write("short", "abc");
  EXPECT_THROW(node_state_file(t / "short"), std::runtime_error);
  ASSERT_EQ(symlink((t / "state").c_str(), (t / "link").c_str()), 0);
  EXPECT_THROW(node_state_file(t / "link"), std::system_error);
}

// Another release's file (its magic, another layout, of its own size or of this one's):
// the error names the two layouts, so that the mismatch is not taken for damage.
TEST(NodeState, AnotherLayoutsFileIsNamedAsSuch) {
  temp_dir t;
  const auto header = [](std::uint32_t layout, std::size_t size) {
    std::string text(size, '\0');
    const std::uint64_t magic = node_state::kMagic;
    std::memcpy(&text[0], &magic, sizeof magic);
    std::memcpy(&text[sizeof magic], &layout, sizeof layout);
    return text;
  };
  const auto refusal = [&](const std::string& name) {
    try {
      node_state_file f(t / name);
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string("opened");
  };
  const std::string older = std::to_string(node_state::kVersion - 1);
  const std::string words = " is of node-state layout " + older + ", which this build (layout " +
                            std::to_string(node_state::kVersion) + ") cannot read: another trainctl version made it";
  for (const std::size_t size : {sizeof(node_state), sizeof(node_state) - 4096}) {
    const std::string name = "state" + std::to_string(size);
    t.write(name, header(node_state::kVersion - 1, size));
    chmod((t / name).c_str(), 0600);
    EXPECT_EQ(refusal(name), "node state " + (t / name) + words);
    std::string why;
    EXPECT_EQ(read_node_state(t / name, &why), nullptr);
    EXPECT_EQ(why, "node state " + (t / name) + words);
  }
}

TEST(NodeState, LastCloserRemovesTheFile) {
  temp_dir t;
  {
    node_state_file a(t / "state");
    {
      node_state_file b(t / "state");
      b.unlink_if_last();
      EXPECT_TRUE(trainctl_test::exists(t / "state"));
    }
    a.unlink_if_last();
  }
  EXPECT_FALSE(trainctl_test::exists(t / "state"));
}

// Another user who makes /dev/shm/trainctl-<uid> first denies this user nothing, nor do
// the 16 next names anyone could guess (the old .1 to .16), nor directories of hers
// named like the private one: this user's own directory with a random name is made,
// found again by every later call, and the note says where.
TEST(NodeState, ASquattedStateDirectoryGivesWayToAPrivateOneNobodyCanGuess) {
  if (getuid() != 0) GTEST_SKIP() << "needs root to give the directory to another user";
  temp_dir shm;
  setenv("TRAINCTL_SHM_DIR", shm.path().c_str(), 1);
  unsetenv("XDG_RUNTIME_DIR");
  const std::string usual = shm / ("trainctl-" + std::to_string(getuid()));
  for (const std::string& name : {usual, usual + ".1", usual + ".16", usual + "-AAAAAA", usual + "-aaaaaa"}) {
    ASSERT_EQ(mkdir(name.c_str(), 0700), 0) << name;
    ASSERT_EQ(chown(name.c_str(), 65534, 65534), 0);
  }
  ASSERT_EQ(symlink(shm.path().c_str(), (usual + "-000000").c_str()), 0);  // a link of hers to a real directory
  std::string note;
  const std::string priv = state_dir(&note);
  ASSERT_EQ(priv.compare(0, usual.size() + 1, usual + "-"), 0) << priv;
  ASSERT_EQ(priv.size(), usual.size() + 7) << priv;
  EXPECT_NE(note.find("not to"), std::string::npos) << note;
  EXPECT_NE(note.find("node state on this node is in " + priv + " instead"), std::string::npos) << note;
  struct stat st {};
  ASSERT_EQ(lstat(priv.c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  EXPECT_EQ(state_dir(), priv) << "found again, not made again";
  node_state_file f(state_dir() + "/s");  // usable: private, this user's
  // A second private directory (two processes made one at once): every caller picks
  // the same first one.
  std::string other = usual + "-zzzzzz";
  ASSERT_EQ(mkdir(other.c_str(), 0700), 0);
  EXPECT_EQ(state_dir(), std::min(priv, other));
  rmdir(other.c_str());
  // The plugin's directory, when it exists, comes first.
  temp_dir run;
  setenv("TRAINCTL_RUN_DIR", run.path().c_str(), 1);
  const std::string mine = run / std::to_string(getuid());
  ASSERT_EQ(mkdir(mine.c_str(), 0700), 0);
  EXPECT_EQ(state_dir(), mine);
  // Used, it is held with a shared lock, as the plugin's tasks hold it: the job epilog,
  // which removes it only when it can lock it alone, leaves it to this process.
  const int epilog = open(mine.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  ASSERT_GE(epilog, 0);
  EXPECT_NE(flock(epilog, LOCK_EX | LOCK_NB), 0) << "without the plugin too, the directory in use is held";
  close(epilog);
  setenv("TRAINCTL_RUN_DIR", "/nonexistent/trainctl-run", 1);
  unsetenv("TRAINCTL_SHM_DIR");
}

// The plugin names the ranks' node state from the job's environment as root, the
// supervisor from its own as the user: both through trusted_state_dir and
// step_state_name, so both name the same file.
TEST(NodeState, ThePluginAndTheSupervisorChooseOneDirectory) {
  const uid_t me = getuid();
  temp_dir xdg, run;  // mkdtemp: 0700, this user's
  const std::string run_dir = run / std::to_string(me);
  ASSERT_EQ(mkdir(run_dir.c_str(), 0700), 0);
  trusted_dir d = trusted_state_dir(me, xdg.path(), run.path());
  EXPECT_EQ(d.path, xdg / "trainctl");
  EXPECT_FALSE(d.run_dir);
  // A login node's XDG_RUNTIME_DIR that is not there, or one others can write: the run dir.
  d = trusted_state_dir(me, "/nonexistent/run/user/1000", run.path());
  EXPECT_EQ(d.path, run_dir);
  EXPECT_TRUE(d.run_dir);
  ASSERT_EQ(chmod(xdg.path().c_str(), 0777), 0);
  EXPECT_EQ(trusted_state_dir(me, xdg.path(), run.path()).path, run_dir) << "a directory others can write";
  ASSERT_EQ(chmod(xdg.path().c_str(), 0700), 0);
  EXPECT_EQ(trusted_state_dir(me, "relative/dir", run.path()).path, run_dir);
  // Another user's directories are never this user's.
  EXPECT_EQ(trusted_state_dir(me + 1, xdg.path(), run.path()).path, "");
  // A link in the run dir's place is not followed.
  ASSERT_EQ(rmdir(run_dir.c_str()), 0);
  ASSERT_EQ(symlink(xdg.path().c_str(), run_dir.c_str()), 0);
  EXPECT_EQ(trusted_state_dir(me, "", run.path()).path, "");
  EXPECT_EQ(step_state_name("42", "3", "n2"), "42.3-n2");
  EXPECT_EQ(step_state_name("42", "batch", "n2"), "42.batch-n2");
}

// Every task holds its run directory with a shared lock, so that the job epilog (which
// removes it only when it locks it alone) leaves it; a directory replaced meanwhile is
// not held.
TEST(NodeState, ARunDirectoryIsHeldShared) {
  temp_dir t;
  const std::string dir = t / "run";
  ASSERT_EQ(mkdir(dir.c_str(), 0700), 0);
  struct stat st {};
  ASSERT_EQ(lstat(dir.c_str(), &st), 0);
  const int task = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  ASSERT_GE(task, 0);
  EXPECT_TRUE(hold_dir_shared(task, dir, st));
  const int epilog = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  ASSERT_GE(epilog, 0);
  EXPECT_NE(flock(epilog, LOCK_EX | LOCK_NB), 0) << "the epilog cannot lock it alone while a task holds it";
  const int other_task = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  EXPECT_TRUE(hold_dir_shared(other_task, dir, st)) << "tasks share it";
  close(other_task);
  close(task);
  // The directory went and another took its name (the epilog removed it, a task made it
  // again): the first one's identity no longer holds. (Moved aside, not removed, so that
  // its inode number cannot come back for the new one.)
  ASSERT_EQ(rename(dir.c_str(), (t / "gone").c_str()), 0);
  ASSERT_EQ(mkdir(dir.c_str(), 0700), 0);
  const int late = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  ASSERT_GE(late, 0);
  EXPECT_FALSE(hold_dir_shared(late, dir, st));
  close(late);
  close(epilog);
}

TEST(NodeState, DefaultPathIsPerJobStep) {
  setenv("SLURM_JOB_ID", "42", 1);
  setenv("SLURM_STEP_ID", "3", 1);
  setenv("SLURMD_NODENAME", "n2", 1);
  unsetenv("XDG_RUNTIME_DIR");
  EXPECT_EQ(default_state_path(), "/dev/shm/trainctl-" + std::to_string(getuid()) + "/42.3-n2");
  {
    temp_dir xdg;  // mkdtemp: 0700, this user's
    setenv("XDG_RUNTIME_DIR", xdg.path().c_str(), 1);
    EXPECT_EQ(default_state_path(), xdg / "trainctl/42.3-n2");
    setenv("XDG_RUNTIME_DIR", "/nonexistent/run/user/1000", 1);  // a login node's, not here
    EXPECT_EQ(default_state_path(), "/dev/shm/trainctl-" + std::to_string(getuid()) + "/42.3-n2");
    unsetenv("XDG_RUNTIME_DIR");
  }
  unsetenv("SLURMD_NODENAME");
  unsetenv("SLURM_JOB_ID");
  unsetenv("SLURM_STEP_ID");
}

TEST(NodeState, AFileLeftByAKilledStepStartsClean) {
  temp_dir t;
  {
    node_state_file old(t / "state");
    old.get().flags.fetch_or(kFlagPreempted | kFlagMemory);
    old.register_switch(switch_kind::exit, "kill-switch", "/x/kill");
  }  // closed without unlink_if_last, as a killed process would leave it
  node_state_file fresh(t / "state");
  EXPECT_EQ(fresh.get().flags.load(), 0u);
  EXPECT_EQ(fresh.get().slots[0].state.load(), 0u);
  node_state_file second(t / "state");  // a second user of a live state resets nothing
  fresh.get().flags.fetch_or(kFlagPreempted);
  node_state_file third(t / "state");
  EXPECT_EQ(third.get().flags.load(), kFlagPreempted);
}

namespace {
std::string refusal(const std::string& path) {
  try {
    node_state_file f(path);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}
}  // namespace

// Mallory pre-created alice's directory (or the whole name) for the next job ids.
TEST(NodeStateSafety, ADirectoryOfAnotherUserIsRefusedByName) {
  if (getuid() != 0) GTEST_SKIP() << "needs root to make a directory owned by another user";
  temp_dir t;
  ASSERT_EQ(mkdir((t / "trainctl-1000").c_str(), 0700), 0);
  ASSERT_EQ(chown((t / "trainctl-1000").c_str(), 65534, 65534), 0);
  const std::string why = refusal(t / "trainctl-1000/7.0-n1");
  EXPECT_NE(why.find("node state directory " + (t / "trainctl-1000") + " belongs to"), std::string::npos) << why;
  EXPECT_NE(why.find("uid 65534"), std::string::npos) << why;
  EXPECT_EQ(why.find('\n'), std::string::npos);
  EXPECT_FALSE(trainctl_test::exists(t / "trainctl-1000/7.0-n1"));
}

TEST(NodeStateSafety, AWorldWritableOrSymlinkedDirectoryIsRefused) {
  temp_dir t;
  ASSERT_EQ(mkdir((t / "open").c_str(), 0777), 0);
  ASSERT_EQ(chmod((t / "open").c_str(), 0777), 0);
  EXPECT_NE(refusal(t / "open/s").find("writable by group or others (mode 0777)"), std::string::npos);
  ASSERT_EQ(mkdir((t / "real").c_str(), 0700), 0);
  ASSERT_EQ(symlink((t / "real").c_str(), (t / "link").c_str()), 0);
  EXPECT_NE(refusal(t / "link/s").find("symlink"), std::string::npos);
  EXPECT_FALSE(trainctl_test::exists(t / "real/s"));
}

TEST(NodeStateSafety, AMissingDirectoryIsCreatedPrivate) {
  temp_dir t;
  { node_state_file f(t / "trainctl-1/s"); }
  struct stat st {};
  ASSERT_EQ(lstat((t / "trainctl-1").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
}

// A planted lock file made the publisher role silently unobtainable.
TEST(NodeStateSafety, APlantedLockFileIsReportedNotSilent) {
  if (getuid() != 0) GTEST_SKIP() << "needs root to make a file owned by another user";
  temp_dir t;
  node_state_file f(t / "s");
  trainctl_test::touch(t / "s.lock");
  ASSERT_EQ(chown((t / "s.lock").c_str(), 65534, 65534), 0);
  std::string problem;
  EXPECT_FALSE(f.try_become_publisher(&problem));
  EXPECT_NE(problem.find("publisher lock " + (t / "s.lock") + " belongs to"), std::string::npos) << problem;
}

TEST(NodeStateSafety, ASymlinkedLockFileIsNotFollowed) {
  temp_dir t;
  node_state_file f(t / "s");
  trainctl_test::touch(t / "victim");
  ASSERT_EQ(symlink((t / "victim").c_str(), (t / "s.lock").c_str()), 0);
  std::string problem;
  EXPECT_FALSE(f.try_become_publisher(&problem));
  EXPECT_NE(problem.find("s.lock"), std::string::npos) << problem;
}

// A step that was killed (or whose launch failed) left its files behind for good.
TEST(NodeStateSafety, StaleFilesAreSweptLiveOnesKept) {
  temp_dir t;
  const std::string dir = t / "trainctl-1";
  {
    node_state_file dead(dir + "/dead");
    dead.try_become_publisher();
  }  // closed, not unlinked
  trainctl_test::touch(dir + "/orphan.lock");
  trainctl_test::touch(dir + "/x.new.123");
  // A finished job's state that was zeroed, and one truncated: no magic, found by name.
  { node_state_file zeroed(dir + "/1234.0-n1"), cut(dir + "/ppid77"); }
  ASSERT_EQ(truncate((dir + "/ppid77").c_str(), 0), 0);
  const std::string zeros(sizeof(node_state), '\0');
  const int z = open((dir + "/1234.0-n1").c_str(), O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
  ASSERT_GE(z, 0);
  ASSERT_EQ(pwrite(z, zeros.data(), zeros.size(), 0), static_cast<ssize_t>(zeros.size()));
  close(z);
  trainctl_test::touch(dir + "/notes");  // not trainctl's: kept
  node_state_file live(dir + "/live");
  ASSERT_TRUE(live.try_become_publisher());
  EXPECT_EQ(sweep_stale_state(dir, 3600), 0) << "nothing is an hour old";
  // dead, dead.lock, orphan.lock, x.new.123, 1234.0-n1, ppid77
  EXPECT_EQ(sweep_stale_state(dir, -1), 6);
  EXPECT_FALSE(trainctl_test::exists(dir + "/1234.0-n1"));
  EXPECT_FALSE(trainctl_test::exists(dir + "/ppid77"));
  EXPECT_TRUE(trainctl_test::exists(dir + "/notes"));
  EXPECT_FALSE(trainctl_test::exists(dir + "/dead"));
  EXPECT_FALSE(trainctl_test::exists(dir + "/orphan.lock"));
  EXPECT_TRUE(trainctl_test::exists(dir + "/live"));
  EXPECT_TRUE(trainctl_test::exists(dir + "/live.lock"));
  EXPECT_EQ(sweep_stale_state(t / "absent", -1), 0);
  EXPECT_FALSE(trainctl_test::exists(t / "absent"));
}

// The epilog of a job whose ranks on the node were all killed (no supervisor, nobody left
// to remove what they used): that job's state goes at once, a running job's young state
// stays, and the stack file of a process that is gone goes whatever its age.
TEST(NodeStateSafety, AnEndedJobsStateAndDeadProcessesStacksGoAtOnce) {
  temp_dir t;
  const std::string dir = t / "trainctl-1";
  {
    node_state_file ended(dir + "/42.0-n2"), other(dir + "/420.0-n2");
    ended.try_become_publisher();
  }  // closed, not unlinked
  const pid_t gone = fork();
  if (gone == 0) _exit(0);
  ASSERT_GT(gone, 0);
  ASSERT_EQ(waitpid(gone, nullptr, 0), gone);
  trainctl_test::touch(dir + "/stacks." + std::to_string(gone));
  trainctl_test::touch(dir + "/stacks." + std::to_string(getpid()));
  // 42.0-n2, its lock, the dead process's stacks
  EXPECT_EQ(sweep_stale_state(dir, 3600, "42"), 3);
  EXPECT_FALSE(trainctl_test::exists(dir + "/42.0-n2"));
  EXPECT_FALSE(trainctl_test::exists(dir + "/42.0-n2.lock"));
  EXPECT_TRUE(trainctl_test::exists(dir + "/420.0-n2")) << "another job's, young: it may be starting";
  EXPECT_FALSE(trainctl_test::exists(dir + "/stacks." + std::to_string(gone)));
  EXPECT_TRUE(trainctl_test::exists(dir + "/stacks." + std::to_string(getpid()))) << "a live process's";
}
