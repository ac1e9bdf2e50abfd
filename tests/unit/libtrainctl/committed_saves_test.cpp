#include "committed_saves.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <stdexcept>

#include "fixture.hpp"

using namespace trainctl;
using trainctl_test::temp_dir;

namespace {

// A save of `world` ranks at `step` into the directory `name` of `dir`, committed by
// the ranks listed (the others failed before saved()).
void save_dir(const temp_dir& dir, const std::string& name, std::int64_t step, std::int64_t world,
              std::initializer_list<std::int64_t> committed) {
  dir.write(name + "/model.pt", "weights");
  for (const auto r : committed) commit_checkpoint(dir / name, commit_marker{step, r, world, "alps-42"});
}

std::string resumed(const temp_dir& dir) {
  const auto c = newest_committed(dir.path());
  return c ? c->path.substr(dir.path().size() + 1) : "(none)";
}

}  // namespace

TEST(CommittedSaves, MarkerRoundTripsAndRefusesTheRest) {
  const commit_marker m{1200, 3, 8, "alps-42"};
  EXPECT_EQ(format_commit_marker(m), "trainctl-commit 1 step=1200 rank=3 world=8 run=alps-42\n");
  const auto back = parse_commit_marker(format_commit_marker(m));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->step, 1200);
  EXPECT_EQ(back->rank, 3);
  EXPECT_EQ(back->world, 8);
  EXPECT_EQ(back->run, "alps-42");
  const auto none = parse_commit_marker("trainctl-commit 1 step=0 rank=0 world=1 run=-\n");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->run, "");
  for (const char* bad :
       {"", "trainctl-commit 1 step=1 rank=0 world=1 run=-",  // cut before its end
        "trainctl-commit 2 step=1 rank=0 world=1 run=-\n",
        "trainctl-commit 1 step=1 rank=2 world=2 run=-\n",  // a rank past the world
        "trainctl-commit 1 step=1 rank=0 world=0 run=-\n", "trainctl-commit 1 step=-1 rank=0 world=1 run=-\n",
        "trainctl-commit 1 step=1 rank=0 world=1 run=a/b\n",
        "trainctl-commit 1 step=99999999999999999999 rank=0 world=1 run=-\n",
        "trainctl-commit 1 step=1 rank=0 world=1 run=- extra\n"})
    EXPECT_FALSE(parse_commit_marker(bad)) << bad;
}

TEST(CommittedSaves, NothingToResumeIsAFreshStart) {
  temp_dir dir;
  EXPECT_FALSE(newest_committed(dir / "never-made"));
  EXPECT_EQ(resumed(dir), "(none)");
  dir.write("step_00000010/model.pt", "weights");  // saved, never committed
  EXPECT_EQ(resumed(dir), "(none)");
}

// The newest save that every rank committed, not a newer one only some ranks did: the
// rank whose save failed (raised) at the deadline never said saved().
TEST(CommittedSaves, TheNewestEveryRankCommitted) {
  temp_dir dir;
  save_dir(dir, "step_00000100", 100, 4, {0, 1, 2, 3});
  save_dir(dir, "step_00000200", 200, 4, {0, 1, 2});
  EXPECT_EQ(resumed(dir), "step_00000100");
  commit_checkpoint(dir / "step_00000200", commit_marker{200, 3, 4, "alps-42"});
  EXPECT_EQ(resumed(dir), "step_00000200");
  const auto c = newest_committed(dir.path());
  ASSERT_TRUE(c);
  EXPECT_EQ(c->step, 200);
  EXPECT_EQ(c->world, 4);
  // A half-written save in progress (a temporary name, no markers) changes nothing.
  dir.write("step_00000300.tmp.abc/model.pt", "half");
  EXPECT_EQ(resumed(dir), "step_00000200");
  // The step decides, not the name's order.
  save_dir(dir, "aaa-latest", 250, 1, {0});
  EXPECT_EQ(resumed(dir), "aaa-latest");
}

// Ranks' markers must tell of one save: the same step, world and run.
TEST(CommittedSaves, MarkersOfAnotherSaveDoNotComplete) {
  temp_dir dir;
  save_dir(dir, "ckpt", 100, 2, {0});
  commit_checkpoint(dir / "ckpt", commit_marker{90, 1, 2, "alps-42"});  // rank 1's of an earlier save
  EXPECT_EQ(resumed(dir), "(none)");
  commit_checkpoint(dir / "ckpt", commit_marker{100, 1, 3, "alps-42"});  // another world size
  EXPECT_EQ(resumed(dir), "(none)");
  commit_checkpoint(dir / "ckpt", commit_marker{100, 1, 2, "alps-7"});  // another run
  EXPECT_EQ(resumed(dir), "(none)");
  commit_checkpoint(dir / "ckpt", commit_marker{100, 1, 2, "alps-42"});
  EXPECT_EQ(resumed(dir), "ckpt");
}

// A checkpoint that is one file (Lightning's .ckpt) has its markers beside it.
TEST(CommittedSaves, AFileCheckpointIsMarkedBesideIt) {
  temp_dir dir;
  dir.write("step=10.ckpt", "weights");
  dir.write("step=20.ckpt", "weights");
  for (int r = 0; r < 2; ++r) commit_checkpoint(dir / "step=10.ckpt", commit_marker{10, r, 2, ""});
  commit_checkpoint(dir / "step=20.ckpt", commit_marker{20, 0, 2, ""});
  EXPECT_EQ(resumed(dir), "step=10.ckpt");
  struct stat st {};
  EXPECT_EQ(lstat((dir / ".step=10.ckpt.trainctl-committed.1").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
}

// What a teammate can plant in a shared checkpoint directory counts for nothing: a link
// to a checkpoint, a link or FIFO as a marker (read without blocking), another user's
// marker or checkpoint.
TEST(CommittedSaves, PlantedLinksAndOthersFilesCountForNothing) {
  temp_dir dir;
  save_dir(dir, "step_00000100", 100, 2, {0, 1});
  ASSERT_EQ(symlink((dir / "step_00000100").c_str(), (dir / "step_00000900").c_str()), 0);
  EXPECT_EQ(resumed(dir), "step_00000100") << "a link to a checkpoint is no checkpoint";

  save_dir(dir, "step_00000200", 200, 2, {0});
  ASSERT_EQ(symlink((dir / "step_00000100/.trainctl-committed.1").c_str(),
                    (dir / "step_00000200/.trainctl-committed.1").c_str()),
            0);
  EXPECT_EQ(resumed(dir), "step_00000100") << "a linked marker";
  ASSERT_EQ(unlink((dir / "step_00000200/.trainctl-committed.1").c_str()), 0);
  ASSERT_EQ(mkfifo((dir / "step_00000200/.trainctl-committed.1").c_str(), 0666), 0);
  EXPECT_EQ(resumed(dir), "step_00000100") << "a FIFO as a marker, opened without blocking";
  ASSERT_EQ(unlink((dir / "step_00000200/.trainctl-committed.1").c_str()), 0);

  if (geteuid() != 0) GTEST_SKIP() << "another user's files need root to make";
  save_dir(dir, "step_00000300", 300, 1, {0});
  ASSERT_EQ(lchown((dir / "step_00000300/.trainctl-committed.0").c_str(), 4242, 4242), 0);
  EXPECT_EQ(resumed(dir), "step_00000100") << "another user's marker";
  save_dir(dir, "step_00000400", 400, 1, {0});
  ASSERT_EQ(lchown((dir / "step_00000400").c_str(), 4242, 4242), 0);
  EXPECT_EQ(resumed(dir), "step_00000100") << "another user's checkpoint";
}

TEST(CommittedSaves, CommitRefusesWhatIsNoCheckpointOfThisUsers) {
  temp_dir dir;
  dir.write("real/model.pt", "weights");
  ASSERT_EQ(symlink((dir / "real").c_str(), (dir / "link").c_str()), 0);
  EXPECT_THROW(commit_checkpoint(dir / "link", commit_marker{1, 0, 1, ""}), std::invalid_argument);
  EXPECT_THROW(commit_checkpoint(dir / "missing", commit_marker{1, 0, 1, ""}), std::invalid_argument);
  EXPECT_THROW(commit_checkpoint(dir / "real", commit_marker{1, 1, 1, ""}), std::invalid_argument);
  EXPECT_THROW(commit_checkpoint(dir / "real", commit_marker{-1, 0, 1, ""}), std::invalid_argument);
  try {
    commit_checkpoint(dir / "link", commit_marker{1, 0, 1, ""});
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("is a link; accepted:"), std::string::npos) << e.what();
  }
  // A trailing slash names the directory, as the shell completes it.
  commit_checkpoint(dir / "real/", commit_marker{1, 0, 1, ""});
  EXPECT_EQ(resumed(dir), "real");
  // A marker planted as a link under the marker's name is replaced, never written through.
  dir.write("victim", "precious");
  ASSERT_EQ(unlink((dir / "real/.trainctl-committed.0").c_str()), 0);
  ASSERT_EQ(symlink((dir / "victim").c_str(), (dir / "real/.trainctl-committed.0").c_str()), 0);
  commit_checkpoint(dir / "real", commit_marker{2, 0, 1, ""});
  std::ifstream victim(dir / "victim");
  std::string text((std::istreambuf_iterator<char>(victim)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "precious");
  EXPECT_EQ(newest_committed(dir.path())->step, 2);
}
