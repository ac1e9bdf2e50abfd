#include "stack_dump.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <thread>

#include "fixture.hpp"

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
  EXPECT_EQ(innermost_python_frame(""), "");
  EXPECT_EQ(innermost_python_frame("garbage\nFile \"x\n"), "");
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
  EXPECT_EQ(suspect_hosts(s), (std::set<std::string>{"n2"}));
  s[2].frame = "load_batch (train.py:88)";
  EXPECT_TRUE(suspect_hosts(s).empty()) << "half the ranks elsewhere: no clear odd one out";
}

// A rank that is no Python program still gets its native stack, and the header says so.
TEST(StackDump, ARankWithoutThePythonPackageGetsANativeStackAndTheDumpReadsBack) {
  trainctl_test::temp_dir t;
  const pid_t child = fork();
  if (child == 0) {
    pause();
    _exit(0);
  }
  proc_info p;
  p.pid = child;
  p.ours = true;
  dump_options o;
  o.out_dir = t / "stacks";
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
  const auto back = read_dumps(t / "stacks");
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].frame, out[0].frame);
  EXPECT_EQ(back[0].pid, child);
  EXPECT_TRUE(read_dumps(t / "stacks", time(nullptr) + 60).empty()) << "an earlier dump is not this stall's";
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
  const pid_t child = fork();
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
