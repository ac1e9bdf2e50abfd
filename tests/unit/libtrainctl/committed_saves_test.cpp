#include "committed_saves.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <stdexcept>
#include <system_error>

#include "fixture.hpp"

using namespace trainctl;
using trainctl_test::temp_dir;

namespace {

// A save of `world` ranks at `step` into the directory `name` of `dir`, committed by
// the ranks listed (the others failed before saved()).
void save_dir(const temp_dir& dir, const std::string& name, std::int64_t step, std::int64_t world,
              std::initializer_list<std::int64_t> committed) {
  dir.write(name + "/model.pt", "weights");
  for (const auto r : committed) commit_checkpoint(dir / name, commit_marker{step, r, world, "alps-42", "4711.0"});
}

std::string resumed(const temp_dir& dir) {
  const auto c = newest_committed(dir.path());
  return c ? c->path.substr(dir.path().size() + 1) : "(none)";
}

}  // namespace

TEST(CommittedSaves, MarkerRoundTripsAndRefusesTheRest) {
  commit_marker m{1200, 3, 8, "alps-42", "4711.1", "step_00001200"};
  EXPECT_EQ(format_commit_marker(m),
            "trainctl-commit 2 step=1200 rank=3 world=8 run=alps-42 attempt=4711.1 name=step_00001200\n");
  auto back = parse_commit_marker(format_commit_marker(m));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->step, 1200);
  EXPECT_EQ(back->rank, 3);
  EXPECT_EQ(back->world, 8);
  EXPECT_EQ(back->run, "alps-42");
  EXPECT_EQ(back->attempt, "4711.1");
  EXPECT_EQ(back->name, "step_00001200");
  // A name with bytes a marker's word cannot hold is kept encoded.
  m.name = "epoch 3/step=10";
  EXPECT_NE(format_commit_marker(m).find(" name=epoch%203%2Fstep=10\n"), std::string::npos);
  EXPECT_TRUE(parse_commit_marker(format_commit_marker(m)));
  // An earlier trainctl's markers (version 1) are still read.
  const auto v1 = parse_commit_marker("trainctl-commit 1 step=0 rank=0 world=1 run=-\n");
  ASSERT_TRUE(v1);
  EXPECT_EQ(v1->run, "");
  EXPECT_EQ(v1->version, 1);
  for (const char* bad :
       {"", "trainctl-commit 2 step=1 rank=0 world=1 run=- attempt=1.0 name=a",  // cut before its end
        "trainctl-commit 3 step=1 rank=0 world=1 run=- attempt=1.0 name=a\n",
        "trainctl-commit 2 step=1 rank=0 world=1 run=-\n",                     // a version 2 without its words
        "trainctl-commit 1 step=1 rank=0 world=1 run=- attempt=1.0 name=a\n",  // a version 1 with them
        "trainctl-commit 2 step=1 rank=2 world=2 run=- attempt=1.0 name=a\n",  // a rank past the world
        "trainctl-commit 2 step=1 rank=0 world=0 run=- attempt=1.0 name=a\n",
        "trainctl-commit 2 step=-1 rank=0 world=1 run=- attempt=1.0 name=a\n",
        "trainctl-commit 2 step=1 rank=0 world=1 run=a/b attempt=1.0 name=a\n",
        "trainctl-commit 2 step=1 rank=0 world=1 run=- attempt=a/b name=a\n",
        "trainctl-commit 2 step=1 rank=0 world=1 run=- attempt= name=a\n",
        "trainctl-commit 2 step=1 rank=0 world=1 run=- attempt=1.0 name=\n",
        "trainctl-commit 2 step=1 rank=0 world=1 run=- attempt=1.0 name=a%2\n",
        "trainctl-commit 2 step=1 rank=0 world=1 run=- attempt=1.0 name=a/b\n",
        "trainctl-commit 2 step=99999999999999999999 rank=0 world=1 run=- attempt=1.0 name=a\n",
        "trainctl-commit 2 step=1 rank=0 world=1 run=- attempt=1.0 name=a extra\n"})
    EXPECT_FALSE(parse_commit_marker(bad)) << bad;
}

TEST(CommittedSaves, TheAttemptIsTheJobAndItsRequeue) {
  const auto env = [](std::map<std::string, std::string> vars) {
    return [vars](const char* name) {
      const auto it = vars.find(name);
      return it == vars.end() ? std::string() : it->second;
    };
  };
  EXPECT_EQ(save_attempt(env({{"SLURM_JOB_ID", "4711"}, {"SLURM_RESTART_COUNT", "2"}})), "4711.2");
  EXPECT_EQ(save_attempt(env({{"SLURM_JOB_ID", "4711"}})), "4711.0");
  EXPECT_EQ(save_attempt(env({})), "local.0");
  EXPECT_EQ(save_attempt(env({{"SLURM_JOB_ID", "a b"}, {"SLURM_RESTART_COUNT", "x"}})), "local.0");
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
  commit_checkpoint(dir / "step_00000200", commit_marker{200, 3, 4, "alps-42", "4711.0"});
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
  commit_checkpoint(dir / "ckpt", commit_marker{90, 1, 2, "alps-42", "4711.0"});  // rank 1's of an earlier save
  EXPECT_EQ(resumed(dir), "(none)");
  commit_checkpoint(dir / "ckpt", commit_marker{100, 1, 3, "alps-42", "4711.0"});  // another world size
  EXPECT_EQ(resumed(dir), "(none)");
  commit_checkpoint(dir / "ckpt", commit_marker{100, 1, 2, "alps-7", "4711.0"});  // another run
  EXPECT_EQ(resumed(dir), "(none)");
  commit_checkpoint(dir / "ckpt", commit_marker{100, 1, 2, "alps-42", "4711.0"});
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

// A save redone in place by a later attempt (HF's checkpoint-N, after a resume from before
// N) is not complete with the earlier attempt's markers: the rank that had not rewritten
// its part yet when the job ended would read as committed.
TEST(CommittedSaves, ASaveRedoneInPlaceIsNotCommittedByTheEarlierAttempt) {
  temp_dir dir;
  dir.write("checkpoint-100/model.pt", "weights");
  commit_checkpoint(dir / "checkpoint-100", commit_marker{100, 0, 2, "alps-42", "4711.0"});
  commit_checkpoint(dir / "checkpoint-100", commit_marker{100, 1, 2, "alps-42", "4711.0"});
  EXPECT_EQ(resumed(dir), "checkpoint-100");
  // Job 4712 saves step 100 again in place: rank 1 commits, rank 0 is cut mid-write.
  commit_checkpoint(dir / "checkpoint-100", commit_marker{100, 1, 2, "alps-42", "4712.0"});
  const resume_scan scan = scan_saves(dir.path());
  EXPECT_FALSE(scan.found);
  EXPECT_EQ(scan.untrusted, 1);
  EXPECT_NE(scan.why.find("checkpoint-100 (step 100: its ranks' markers come from different attempts"),
            std::string::npos)
      << scan.why;
  // The same rank beginning a save at the same place again removes its own marker first.
  commit_checkpoint(dir / "checkpoint-100", commit_marker{100, 0, 2, "alps-42", "4712.0"});
  EXPECT_EQ(resumed(dir), "checkpoint-100");
  uncommit_checkpoint(dir / "checkpoint-100", 0);
  EXPECT_EQ(resumed(dir), "(none)");
  EXPECT_NE(scan_saves(dir.path()).why.find("rank 0 of 2 has not committed it"), std::string::npos);
  uncommit_checkpoint(dir / "never-made", 0);  // nothing there: nothing done, no error
}

// A checkpoint copied under another name (cp -a step_100 step_900) carries markers that
// name the first: it commits nothing, and the look says so.
TEST(CommittedSaves, ACopiedCheckpointCommitsNothing) {
  temp_dir dir;
  save_dir(dir, "step_100", 100, 1, {0});
  ASSERT_EQ(std::system(("cp -a '" + (dir / "step_100") + "' '" + (dir / "step_900") + "'").c_str()), 0);
  const resume_scan scan = scan_saves(dir.path());
  ASSERT_TRUE(scan.found);
  EXPECT_EQ(scan.found->step, 100);
  EXPECT_EQ(scan.untrusted, 0) << "the copy claims step 100, no newer: " << scan.why;
  ASSERT_EQ(std::system(("rm -rf '" + (dir / "step_100") + "'").c_str()), 0);
  const resume_scan alone = scan_saves(dir.path());
  EXPECT_FALSE(alone.found);
  EXPECT_NE(alone.why.find("step_900 (step 100: its markers name another checkpoint: copied or renamed)"),
            std::string::npos)
      << alone.why;
}

// Saves that carry no markers make resume_path return nothing, and the look says why
// (the array would otherwise retrain from step 0 every task, silently).
TEST(CommittedSaves, SavesItCannotTrustAreSaidNotSkippedSilently) {
  temp_dir dir;
  dir.write("step_10/model.pt", "saved before trainctl");
  dir.write("step_20/model.pt", "committed on rank 0 only");
  dir.write("FINISHED", "");                                                         // no number in its name: no save
  dir.write("config.json", "{}");                                                    // likewise
  ASSERT_EQ(symlink((dir / "step_20").c_str(), (dir / "latest").c_str()), 0);        // an alias: fine
  ASSERT_EQ(symlink("/nonexistent/scratch/step_30", (dir / "step_30").c_str()), 0);  // an absent mount
  const resume_scan scan = scan_saves(dir.path());
  EXPECT_FALSE(scan.found);
  EXPECT_EQ(scan.untrusted, 3) << scan.why;
  EXPECT_NE(scan.why.find("3 saves are not trusted: "), std::string::npos) << scan.why;
  EXPECT_NE(scan.why.find("step_10 (no trainctl marker: still being written, or saved before trainctl, "
                          "committed on rank 0 only, or restored by hand"),
            std::string::npos)
      << scan.why;
  EXPECT_NE(scan.why.find("step_30 (a link to nothing"), std::string::npos) << scan.why;
  EXPECT_EQ(scan.why.find("FINISHED"), std::string::npos) << scan.why;
  EXPECT_EQ(scan.why.find("latest"), std::string::npos) << scan.why;
  // Once a save is committed, the older unmarked ones are not said again (no step to
  // compare), but a newer uncommitted one is.
  save_dir(dir, "step_40", 40, 2, {0, 1});
  save_dir(dir, "step_50", 50, 2, {0});
  const resume_scan later = scan_saves(dir.path());
  ASSERT_TRUE(later.found);
  EXPECT_EQ(later.found->step, 40);
  EXPECT_EQ(later.untrusted, 1);
  EXPECT_NE(later.why.find("step_50 (step 50: rank 1 of 2 has not committed it"), std::string::npos) << later.why;
}

// A directory or another user's file squatting a marker's name fails that commit with one
// line naming what is there; nothing is left behind, and the next save commits.
TEST(CommittedSaves, ASquattedMarkerNameFailsOneCommitWithALine) {
  temp_dir dir;
  dir.write("step_10/model.pt", "weights");
  ASSERT_EQ(mkdir((dir / "step_10/.trainctl-committed.0").c_str(), 0755), 0);
  try {
    commit_checkpoint(dir / "step_10", commit_marker{10, 0, 1, "", "4711.0"});
    FAIL() << "a directory in the marker's place";
  } catch (const std::system_error& e) {
    EXPECT_NE(std::string(e.what()).find("(a directory of yours is in its place)"), std::string::npos) << e.what();
  }
  EXPECT_EQ(std::system(("test -z \"$(ls -A '" + (dir / "step_10") + "' | grep tmp)\"").c_str()), 0)
      << "a temporary left behind";
  EXPECT_EQ(resumed(dir), "(none)");
  save_dir(dir, "step_20", 20, 1, {0});
  EXPECT_EQ(resumed(dir), "step_20");
}

TEST(CommittedSaves, AnotherUsersLinkInPlaceOfTheDirectoryIsRefused) {
  temp_dir dir;
  save_dir(dir, "own/step_10", 10, 1, {0});
  ASSERT_EQ(symlink((dir / "own").c_str(), (dir / "mine").c_str()), 0);
  EXPECT_EQ(newest_committed(dir / "mine")->step, 10) << "a link of the user's own (to scratch) is followed";
  if (geteuid() != 0) GTEST_SKIP() << "another user's link needs root to make";
  ASSERT_EQ(symlink((dir / "own").c_str(), (dir / "teammates").c_str()), 0);
  ASSERT_EQ(lchown((dir / "teammates").c_str(), 4242, 4242), 0);
  try {
    scan_saves(dir / "teammates");
    FAIL() << "another user's link was followed";
  } catch (const std::system_error& e) {
    EXPECT_NE(std::string(e.what()).find("is a link of uid 4242, not yours: refused"), std::string::npos) << e.what();
  }
  EXPECT_THROW(commit_checkpoint(dir / "teammates/step_10", commit_marker{10, 0, 1, "", "4711.0"}),
               std::invalid_argument);
  // A directory others can write in (a team's) is said: a teammate can hide a save there.
  ASSERT_EQ(chmod((dir / "own").c_str(), 02775), 0);
  EXPECT_NE(scan_saves(dir / "own").exposed.find("others can write in"), std::string::npos);
  ASSERT_EQ(chmod((dir / "own").c_str(), 01777), 0);
  EXPECT_EQ(scan_saves(dir / "own").exposed, "") << "sticky: nobody else can remove or rename a save";
  ASSERT_EQ(chmod((dir / "own").c_str(), 0755), 0);
  EXPECT_EQ(scan_saves(dir / "own").exposed, "");
}

// Markers an earlier trainctl wrote (version 1) still commit their checkpoints.
TEST(CommittedSaves, VersionOneMarkersStillCount) {
  temp_dir dir;
  dir.write("step_10/model.pt", "weights");
  dir.write("step_10/.trainctl-committed.0", "trainctl-commit 1 step=10 rank=0 world=2 run=alps-42\n");
  dir.write("step_10/.trainctl-committed.1", "trainctl-commit 1 step=10 rank=1 world=2 run=alps-42\n");
  EXPECT_EQ(resumed(dir), "step_10");
}
