#include "collective_verdict.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <thread>

#include "fixture.hpp"
#include "flight_recorder.hpp"

using namespace trainctl;

namespace {

// A rank whose stack file held `lines` as its flight recorder's digest.
rank_stack rank_with(int rank, std::vector<std::string> lines, std::string frame = "all_reduce (controller.py:355)") {
  rank_stack s;
  s.rank = rank;
  s.host = "n1";
  s.frame = std::move(frame);
  s.collectives = std::move(lines);
  return s;
}

std::string in_reduce(long long seq, bool done = false, const std::string& in = "float32 x 4,194,304") {
  return "pg=0 seq=" + std::to_string(seq) + " done=" + (done ? "1" : "0") + " op=all_reduce at=train.py:88 in=" + in;
}

}  // namespace

TEST(CollectiveVerdict, ARankThatNeverEnteredTheCollectiveIsNamedWithItsStack) {
  const std::vector<rank_stack> ranks = {rank_with(0, {in_reduce(1234)}), rank_with(1, {in_reduce(1234)}),
                                         rank_with(2, {in_reduce(1233, true)}, "load (data.py:40)"),
                                         rank_with(3, {in_reduce(1234)})};
  EXPECT_EQ(
      collective_verdict(ranks),
      "ranks 0,1,3 wait in all_reduce #1234 (float32 x 4,194,304, issued at train.py:88); rank 2's last collective "
      "is #1233: it never entered #1234 (its stack: load (data.py:40))");
}

TEST(CollectiveVerdict, ARankInAnotherCollectiveOrWithOtherSizesIsTheOddOneOut) {
  std::vector<rank_stack> ranks = {rank_with(0, {in_reduce(7)}), rank_with(1, {in_reduce(7)}),
                                   rank_with(2, {"pg=0 seq=7 done=0 op=all_gather at=train.py:91 in=float32 x 4"}),
                                   rank_with(3, {in_reduce(7)})};
  EXPECT_EQ(collective_verdict(ranks),
            "ranks 0,1,3 wait in all_reduce #7 (float32 x 4,194,304, issued at train.py:88); rank 2 entered "
            "all_gather #7 while the others entered all_reduce");
  ranks[2] = rank_with(2, {in_reduce(7, false, "float32 x 8")});
  EXPECT_EQ(collective_verdict(ranks),
            "ranks 0,1,3 wait in all_reduce #7 (float32 x 4,194,304, issued at train.py:88); rank 2 entered "
            "all_reduce #7 with float32 x 8 while the others passed float32 x 4,194,304");
}

TEST(CollectiveVerdict, HalvesThatDisagreeBlameNeither) {
  const std::vector<rank_stack> ranks = {
      rank_with(0, {in_reduce(7)}), rank_with(1, {"pg=0 seq=7 done=0 op=broadcast at=train.py:95 in=float32 x 4"})};
  EXPECT_EQ(collective_verdict(ranks),
            "the ranks disagree on collective #7: rank 0 all_reduce (float32 x 4,194,304), rank 1 broadcast (float32 x "
            "4)");
}

TEST(CollectiveVerdict, AHangOutsideCollectivesIsNotBlamedOnOne) {
  const std::vector<rank_stack> ranks = {rank_with(0, {in_reduce(50, true)}, "evaluate (train.py:120)"),
                                         rank_with(1, {in_reduce(50, true)}, "evaluate (train.py:120)")};
  EXPECT_EQ(collective_verdict(ranks),
            "no rank waits in a collective: the newest, all_reduce #50, completed on every rank, so the ranks are "
            "held in their own code");
}

TEST(CollectiveVerdict, EveryRankInsideOneCollectiveSaysItDoesNotComplete) {
  const std::vector<rank_stack> ranks = {rank_with(0, {in_reduce(9)}), rank_with(1, {in_reduce(9)})};
  EXPECT_EQ(
      collective_verdict(ranks),
      "ranks 0,1 wait in all_reduce #9 (float32 x 4,194,304, issued at train.py:88): every rank entered it and it "
      "does not complete (no rank is behind or in another collective)");
}

TEST(CollectiveVerdict, WithoutARecorderItSaysSoAndWithoutARequestNothing) {
  EXPECT_EQ(collective_verdict({rank_with(0, {"none torch 1.13.1 has no flight recorder for gloo"}),
                                rank_with(1, {"none torch 1.13.1 has no flight recorder for gloo"})}),
            "no flight recorder was available (torch 1.13.1 has no flight recorder for gloo)");
  EXPECT_EQ(collective_verdict({rank_with(0, {}), rank_with(1, {})}), "");  // no torch.distributed: none of it
  EXPECT_EQ(collective_verdict({rank_with(0, {in_reduce(3)}), rank_with(1, {in_reduce(3)}),
                                rank_with(2, {"none the rank did not answer within 5 s"})}),
            "ranks 0,1 wait in all_reduce #3 (float32 x 4,194,304, issued at train.py:88): every rank entered it and "
            "it does not complete (no rank is behind or in another collective); no flight recorder from rank 2 (the "
            "rank did not answer within 5 s)");
}

TEST(CollectiveVerdict, TheGroupComparedIsTheOneWithACollectiveInFlight) {
  const std::vector<rank_stack> ranks = {
      rank_with(0, {in_reduce(20, true), "pg=1 seq=4 done=0 op=all_gather at=train.py:60 in=int64 x 2"}),
      rank_with(1, {in_reduce(20, true), "pg=1 seq=3 done=1 op=all_gather at=train.py:60 in=int64 x 2"},
                "step (a.py:1)")};
  EXPECT_EQ(collective_verdict(ranks),
            "rank 0 waits in all_gather #4 (int64 x 2, issued at train.py:60); rank 1's last collective is #3: it "
            "never entered #4 (its stack: step (a.py:1))");
}

TEST(CollectiveVerdict, WithoutTheRecordersStackTheProgramsFrameSaysWhere) {
  rank_stack waiting = rank_with(0, {"pg=0 seq=8 done=0 op=all_reduce at=? in=float32 x 4"});
  waiting.caller = "train_step (train.py:88)";
  EXPECT_EQ(collective_verdict(
                {waiting, rank_with(1, {"pg=0 seq=7 done=1 op=all_reduce at=? in=int64 x 8"}, "load (d.py:4)")}),
            "rank 0 waits in all_reduce #8 (float32 x 4, issued at train_step (train.py:88)); rank 1's last collective "
            "is #7: it never entered #8 (its stack: load (d.py:4))");
  waiting.caller.clear();  // no Python stack either: where is not said
  EXPECT_EQ(collective_verdict({waiting, rank_with(1, {"pg=0 seq=8 done=0 op=all_reduce at=? in=float32 x 4"})}),
            "ranks 0,1 wait in all_reduce #8 (float32 x 4): every rank entered it and it does not complete (no rank is "
            "behind or in another collective)");
  EXPECT_EQ(collective_verdict({rank_with(0, {"none the rank did not answer within 5 s"})}),
            "no rank's flight recorder answered (the rank did not answer within 5 s)");
}

TEST(CollectiveVerdict, ADigestLineIsReadStrictly) {
  recorded_collective c;
  ASSERT_TRUE(
      parse_recorded_collective("pg=2 seq=15 done=1 op=reduce_scatter at=m.py:3 in=bfloat16 x 8 + bfloat16 x 8", &c));
  EXPECT_EQ(c.pg, 2);
  EXPECT_EQ(c.seq, 15);
  EXPECT_TRUE(c.done);
  EXPECT_EQ(c.op, "reduce_scatter");
  EXPECT_EQ(c.in, "bfloat16 x 8 + bfloat16 x 8");
  EXPECT_FALSE(parse_recorded_collective("pg=2 seq=x done=1 op=a at=b in=c", &c));
  EXPECT_FALSE(parse_recorded_collective("pg=2 seq=1 done=1 op=a in=c", &c));  // no at=
  EXPECT_FALSE(parse_recorded_collective("none no collective recorded yet", &c));
  EXPECT_FALSE(parse_recorded_collective("pg=-1 seq=1 done=1 op=a at=b in=c", &c));
}

// Both sides in one test: a thread plays the rank's listener (flight_recorder.py), the
// request the supervisor's hang dump.
TEST(FlightRecorderRequest, ARankListeningOnItsPipeIsAskedAndItsAnswerRead) {
  trainctl_test::temp_dir dir;
  const pid_t pid = 424242;  // a name only: nothing is signalled
  const std::string stem = dir / ("fr." + std::to_string(pid));
  // Nobody listens: not asked, nothing collected, no wait.
  ASSERT_EQ(mkfifo((stem + ".pipe").c_str(), 0600), 0);
  flight_recorder_request unheard(dir.path(), pid);
  EXPECT_FALSE(unheard.asked());
  EXPECT_TRUE(unheard.collect(nullptr).empty());
  // A listener: reads the request, writes the dump and the digest, renamed into place.
  dir.write("fr.424242.txt", "stale answer of an earlier request\n");
  std::thread rank([&] {
    const int fd = open((stem + ".pipe").c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    char b[8];
    if (fd >= 0 && read(fd, b, sizeof b) > 0) {
      dir.write("fr.424242.pkl.tmp", "PICKLE");
      rename((stem + ".pkl.tmp").c_str(), (stem + ".pkl").c_str());
      dir.write("fr.424242.txt.tmp", in_reduce(5) + "\n");
      rename((stem + ".txt.tmp").c_str(), (stem + ".txt").c_str());
    }
    if (fd >= 0) close(fd);
  });
  // The listener's open must be waiting before the request is written.
  flight_recorder_request req("", 0);
  for (int i = 0; i < 200 && !req.asked(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    req = flight_recorder_request(dir.path(), pid);
  }
  ASSERT_TRUE(req.asked());
  for (int i = 0; i < 500 && !req.answered(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  rank.join();
  std::string dump;
  EXPECT_EQ(req.collect(&dump), std::vector<std::string>{in_reduce(5)});
  EXPECT_EQ(dump, "PICKLE");
}

TEST(FlightRecorderRequest, ARankThatDoesNotAnswerIsOneLine) {
  trainctl_test::temp_dir dir;
  const std::string pipe = dir / "fr.77.pipe";
  ASSERT_EQ(mkfifo(pipe.c_str(), 0600), 0);
  const int reader = open(pipe.c_str(), O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);  // listens, never answers
  ASSERT_GE(reader, 0);
  flight_recorder_request req(dir.path(), 77);
  EXPECT_TRUE(req.asked());
  EXPECT_FALSE(req.answered());
  const auto lines = req.collect(nullptr);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].rfind("none the rank did not answer within ", 0), 0u) << lines[0];
  close(reader);
}

TEST(FlightRecorderEnv, TheRecorderIsOnWithItsFilesInThePrivateDirectory) {
  const auto env = flight_recorder_env("/run/user/1000/trainctl");
  std::map<std::string, std::string> by_name(env.begin(), env.end());
  EXPECT_EQ(by_name.at("TORCH_FR_BUFFER_SIZE"), "2000");         // entries, not bytes
  EXPECT_EQ(by_name.count("TORCH_NCCL_TRACE_BUFFER_SIZE"), 0u);  // torch warns on every rank where it is set
  EXPECT_EQ(by_name.at("TORCH_NCCL_DUMP_ON_TIMEOUT"), "1");
  for (const char* file : {"TORCH_FR_DUMP_TEMP_FILE", "TORCH_NCCL_DEBUG_INFO_PIPE_FILE"})
    EXPECT_EQ(by_name.at(file).rfind("/run/user/1000/trainctl/", 0), 0u) << file;
}

// A rank ended by a signal never removes its FIFO and answers: the supervisor does, its
// own files only.
TEST(FlightRecorderFiles, ARanksLeftoversGoAndNothingElse) {
  trainctl_test::temp_dir dir;
  ASSERT_EQ(mkfifo((dir / "fr.4242.pipe").c_str(), 0600), 0);
  dir.write("fr.4242.txt", "none torch 1.13 has no flight recorder for gloo\n");
  dir.write("fr.4242.pkl", "x");
  dir.write("fr.4243.txt", "another rank's\n");
  dir.write("5000.0-n1", "the node state");
  remove_flight_recorder_files(dir.path(), 4242);
  struct stat st {};
  for (const char* gone : {"fr.4242.pipe", "fr.4242.txt", "fr.4242.pkl"})
    EXPECT_NE(lstat((dir / gone).c_str(), &st), 0) << gone;
  for (const char* kept : {"fr.4243.txt", "5000.0-n1"}) EXPECT_EQ(lstat((dir / kept).c_str(), &st), 0) << kept;
  if (geteuid() == 0) {  // another user's file of that name is not this user's to remove
    dir.write("fr.4244.txt", "x");
    ASSERT_EQ(chown((dir / "fr.4244.txt").c_str(), 65534, 65534), 0);
    remove_flight_recorder_files(dir.path(), 4244);
    EXPECT_EQ(lstat((dir / "fr.4244.txt").c_str(), &st), 0);
  }
}
