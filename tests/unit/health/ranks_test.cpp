#include "ranks.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <fstream>
#include <iterator>
#include <thread>

#include "fixture.hpp"

using namespace trainctl;
using trainctl_test::temp_dir;

namespace {

// A fake /proc: pid -> (ppid, environ, cmdline). Every entry belongs to this user.
void proc(const temp_dir& t, pid_t pid, pid_t ppid, const std::string& env, const std::string& cmd) {
  const std::string dir = "proc/" + std::to_string(pid);
  t.write(dir + "/stat", std::to_string(pid) + " (x y) S " + std::to_string(ppid) + " 1 1 0\n");
  t.write(dir + "/environ", env);
  t.write(dir + "/cmdline", cmd);
}

std::string nul(std::initializer_list<std::string> parts) {
  std::string out;
  for (const auto& p : parts) out += p + '\0';
  return out;
}

const std::vector<std::string> kLaunchers{"torchrun", "accelerate", "deepspeed"};

// The kernel's children files for a fake /proc: TID 1 of `pid` lists `kids`.
void children(const temp_dir& t, pid_t pid, const std::string& kids) {
  t.write("proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/children", kids);
}

}  // namespace

TEST(Ranks, TorchrunWorkersInNewSessionsButNotTheirDataLoaders) {
  temp_dir t;
  proc(t, 100, 1, nul({"PATH=/bin"}), nul({"trainctl-run"}));                                     // supervisor
  proc(t, 101, 100, nul({"PATH=/bin"}), nul({"/usr/bin/python3", "/usr/bin/torchrun", "x.py"}));  // launcher
  proc(t, 102, 101, nul({"RANK=0", "LOCAL_RANK=0"}), nul({"python3", "x.py"}));                   // rank
  proc(t, 103, 101, nul({"RANK=1", "LOCAL_RANK=1"}), nul({"python3", "x.py"}));                   // rank
  proc(t, 104, 102, nul({"RANK=0", "LOCAL_RANK=0"}), nul({"python3", "x.py"}));                   // DataLoader worker
  proc(t, 105, 104, nul({"RANK=0"}), nul({"python3"}));                                           // its child
  proc(t, 200, 1, nul({"RANK=5"}), nul({"python3"}));                                             // elsewhere
  auto ranks = find_ranks(100, kLaunchers, true, t / "proc");
  std::sort(ranks.begin(), ranks.end());
  EXPECT_EQ(ranks, (std::vector<pid_t>{102, 103}));
}

// With children files the search goes from the root down and never reads the rest of
// /proc: a process elsewhere that claims the supervisor as its parent in its stat (a
// fake /proc can say anything) is not found, because no thread of the root lists it.
TEST(Ranks, DescendantsFollowTheChildrenFilesFromTheRootDown) {
  temp_dir t;
  proc(t, 100, 1, "", nul({"trainctl-run"}));
  proc(t, 101, 100, nul({"PATH=/bin"}), nul({"torchrun"}));
  proc(t, 102, 101, nul({"RANK=0"}), nul({"python3", "x.py"}));
  proc(t, 103, 101, nul({"RANK=1"}), nul({"python3", "x.py"}));
  proc(t, 900, 100, nul({"RANK=7"}), nul({"python3"}));  // not listed by 100's threads
  children(t, 100, "101 ");
  children(t, 101, "102 ");
  t.write("proc/101/task/111/children", "103 ");  // a child forked by another thread
  children(t, 102, "");
  children(t, 103, "");
  std::vector<pid_t> found;
  for (const auto& p : descendants(100, kLaunchers, t / "proc")) found.push_back(p.pid);
  std::sort(found.begin(), found.end());
  EXPECT_EQ(found, (std::vector<pid_t>{101, 102, 103}));
}

// A real tree: a child, and its child forked from a second thread. That thread stays
// until the test has looked: when a thread exits, the kernel hands its children to
// another thread of the process, and a look at that moment finds them under neither.
// The test kills what it forked by the pids it knows: a grandchild left asleep would hold
// ctest's output pipe open.
TEST(Ranks, RealDescendantsIncludeChildrenOfOtherThreads) {
  int ready[2], done[2];
  ASSERT_EQ(pipe(ready), 0);
  ASSERT_EQ(pipe(done), 0);
  const pid_t child = trainctl_test::fork_child();
  if (child == 0) {
    std::thread([&] {
      const pid_t grandchild = trainctl_test::fork_child();
      if (grandchild == 0) {
        pause();
        _exit(0);
      }
      (void)!write(ready[1], &grandchild, sizeof grandchild);
      char c;
      (void)!read(done[0], &c, 1);  // the test has looked
    }).join();
    _exit(0);
  }
  pid_t grandchild = 0;
  ASSERT_EQ(read(ready[0], &grandchild, sizeof grandchild), static_cast<ssize_t>(sizeof grandchild));
  std::vector<pid_t> found;
  for (const auto& p : descendants(getpid(), {})) found.push_back(p.pid);
  std::sort(found.begin(), found.end());
  std::vector<pid_t> want{child, grandchild};
  std::sort(want.begin(), want.end());
  EXPECT_EQ(found, want);
  kill(grandchild, SIGKILL);
  (void)!write(done[1], "x", 1);
  waitpid(child, nullptr, 0);
  for (int fd : {ready[0], ready[1], done[0], done[1]}) close(fd);
}

TEST(Ranks, NoLauncherMeansTheCommandIsTheRank) {
  temp_dir t;
  proc(t, 100, 1, "", nul({"trainctl-run"}));
  proc(t, 101, 100, nul({"SLURM_PROCID=3"}), nul({"python3", "train.py"}));
  proc(t, 102, 101, nul({"SLURM_PROCID=3"}), nul({"python3", "train.py"}));  // DataLoader
  EXPECT_EQ(find_ranks(100, kLaunchers, true, t / "proc"), (std::vector<pid_t>{101}));
  EXPECT_TRUE(find_ranks(100, kLaunchers, false, t / "proc").empty()) << "batch step: only rank variables count";
}

TEST(Ranks, ALauncherThatCarriesRankIsStillALauncher) {
  temp_dir t;
  proc(t, 100, 1, "", "");
  proc(t, 101, 100, nul({"RANK=0"}), nul({"python3", "-m", "torch.distributed.run", "x.py"}));
  proc(t, 102, 101, nul({"RANK=0"}), nul({"python3", "x.py"}));
  proc(t, 103, 101, nul({"RANK=1"}), nul({"python3", "x.py"}));
  auto ranks = find_ranks(100, kLaunchers, true, t / "proc");
  std::sort(ranks.begin(), ranks.end());
  EXPECT_EQ(ranks, (std::vector<pid_t>{102, 103}));
}

TEST(Ranks, MpiStyleRankVariables) {
  EXPECT_TRUE(environ_has_rank(nul({"A=1", "OMPI_COMM_WORLD_RANK=3"})));
  EXPECT_TRUE(environ_has_rank(nul({"PMIX_RANK=0"})));
  EXPECT_TRUE(environ_has_rank(nul({"PMI_RANK=2"})));
  EXPECT_FALSE(environ_has_rank(nul({"XRANK=1", "RANK="})));
  EXPECT_FALSE(environ_has_rank(""));
}

TEST(Ranks, LauncherNames) {
  EXPECT_TRUE(cmdline_names_launcher(nul({"/usr/bin/torchrun", "--nnodes=2"}), kLaunchers));
  EXPECT_TRUE(cmdline_names_launcher(nul({"/usr/bin/python3", "/usr/bin/torchrun"}), kLaunchers));
  EXPECT_TRUE(cmdline_names_launcher(nul({"python", "-m", "torch.distributed.run"}), kLaunchers));
  EXPECT_TRUE(cmdline_names_launcher(nul({"python", "-m", "deepspeed.launcher.runner"}), kLaunchers));
  EXPECT_TRUE(cmdline_names_launcher(nul({"accelerate", "launch", "x.py"}), kLaunchers));
  EXPECT_FALSE(cmdline_names_launcher(nul({"python3", "train.py"}), kLaunchers));
}

TEST(Ranks, StatWithAwkwardCommandNames) {
  EXPECT_EQ(parse_stat_ppid("42 (a) b (c)) S 7 1 1"), 7);
  EXPECT_EQ(parse_stat_ppid("42 (x) S"), -1);
  EXPECT_EQ(parse_stat_ppid("garbage"), -1);
}

TEST(Ranks, RealProcessTree) {
  // This test process has no children: nothing to find, and no crash reading /proc.
  EXPECT_TRUE(find_ranks(getpid(), kLaunchers, false).empty());
}

TEST(Ranks, StartTimeIsField22) {
  EXPECT_EQ(parse_stat_start_time("42 (a) b) S 7 1 1 0 -1 4194560 9 0 0 0 1 2 0 0 20 0 1 0 123456 1000 50"), 123456u);
  EXPECT_EQ(parse_stat_start_time("42 (x) S 7 1"), 0u);
}

// Signals go through a pidfd taken when the rank was found: a pid that now names
// another process (another start time) is never signalled.
TEST(Ranks, ARecycledPidIsNeverSignalled) {
  const pid_t child = fork();
  if (child == 0) {
    pause();
    _exit(0);
  }
  temp_dir t;
  proc_info found;
  found.pid = child;
  std::ifstream in("/proc/" + std::to_string(child) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  found.start_time = parse_stat_start_time(stat);
  ASSERT_NE(found.start_time, 0u);

  proc_info recycled = found;
  recycled.start_time += 1;  // what /proc showed for the earlier owner of this pid
  pid_handle stale(recycled);
  EXPECT_FALSE(stale.held());
  EXPECT_FALSE(stale.signal(SIGTERM));

  pid_handle same(found);
  ASSERT_TRUE(same.held());
  EXPECT_TRUE(same.alive());
  EXPECT_TRUE(same.signal(SIGTERM));
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
  EXPECT_FALSE(same.alive()) << "a reaped process's pidfd no longer signals";
}
