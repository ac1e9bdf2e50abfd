// The supervisor's write-out of its ranks' snapshots: both slots of every rank as
// committed saves after a rank died, nothing newer than the last save's step skipped,
// nothing committed by a write that fails, and no slot left in memory either way.
#include "snapshot_writeout.hpp"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>

#include "committed_saves.hpp"
#include "fixture.hpp"
#include "node_state.hpp"
#include "snapshot_store.hpp"

using namespace trainctl;
using trainctl_test::temp_dir;

namespace {

constexpr std::int64_t kWorld = 2;

// Rank `rank`'s snapshots at steps a then b, with the bytes "rank R step S".
void snapshots_of(const std::string& state, std::int64_t rank, std::int64_t a, std::int64_t b,
                  const std::string& ckpt) {
  snapshot_writer w(state, rank);
  for (const std::int64_t step : {a, b}) {
    snapshot_meta m;
    m.step = step;
    m.rank = rank;
    m.world = kWorld;
    m.run = "c-5000";
    m.attempt = "5000.0";
    m.ckpt_dir = ckpt;
    const std::string bytes = "rank " + std::to_string(rank) + " step " + std::to_string(step);
    w.write(m, bytes.data(), bytes.size());
  }
}

std::int64_t now() { return unix_now_ms(); }

std::string read_all(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return "(none)";
  char buf[256];
  const std::size_t n = std::fread(buf, 1, sizeof buf, f);
  std::fclose(f);
  return std::string(buf, n);
}

}  // namespace

TEST(SnapshotWriteout, NothingIsWrittenWhenNoRankDiedAndNoSlotStays) {
  temp_dir d;
  const std::string state = d / "5000.0-n1", ckpt = d / "ckpt";
  snapshots_of(state, 0, 230, 235, ckpt);
  const snapshot_writeout w = write_out_snapshots(state, false, now() + 60000);
  EXPECT_TRUE(w.failed.empty());
  EXPECT_EQ(w.older, 0);
  EXPECT_EQ(w.ranks, 0);
  struct stat st {};
  EXPECT_NE(::stat(ckpt.c_str(), &st), 0);
  EXPECT_TRUE(whole_snapshots(state).empty());
}

TEST(SnapshotWriteout, BothSlotsOfEveryRankBecomeSavesThatResumeFinds) {
  temp_dir d;
  const std::string state = d / "5000.0-n1", ckpt = d / "ckpt";
  snapshots_of(state, 0, 230, 235, ckpt);
  snapshots_of(state, 1, 230, 235, ckpt);
  const snapshot_writeout w = write_out_snapshots(state, true, now() + 60000);
  EXPECT_EQ(w.ranks, 2);
  EXPECT_EQ(w.newest, 235);
  EXPECT_EQ(w.oldest, 230);
  EXPECT_TRUE(w.failed.empty());
  const auto found = newest_committed(ckpt);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->step, 235);
  EXPECT_EQ(found->world, kWorld);
  EXPECT_EQ(found->path, ckpt + "/snapshot-235");
  EXPECT_EQ(read_all(ckpt + "/snapshot-235/rank-1.snapshot"), "rank 1 step 235");
  EXPECT_EQ(read_all(ckpt + "/snapshot-230/rank-0.snapshot"), "rank 0 step 230");
  EXPECT_TRUE(whole_snapshots(state).empty());
}

TEST(SnapshotWriteout, ASnapshotNotNewerThanTheLastCommittedSaveIsNotWritten) {
  temp_dir d;
  const std::string state = d / "5000.0-n1", ckpt = d / "ckpt";
  ASSERT_EQ(::mkdir(ckpt.c_str(), 0700), 0);
  ASSERT_EQ(::mkdir((ckpt + "/checkpoint-232").c_str(), 0700), 0);
  for (std::int64_t r = 0; r < kWorld; ++r) {
    commit_marker m;
    m.step = 232;
    m.rank = r;
    m.world = kWorld;
    m.run = "c-5000";
    m.attempt = "5000.0";
    commit_checkpoint(ckpt + "/checkpoint-232", m);
  }
  snapshots_of(state, 0, 230, 235, ckpt);
  snapshots_of(state, 1, 230, 235, ckpt);
  const snapshot_writeout w = write_out_snapshots(state, true, now() + 60000);
  EXPECT_EQ(w.oldest, 235);
  EXPECT_EQ(w.older, 2);
  EXPECT_EQ(w.older_than, 232);
  struct stat st {};
  EXPECT_NE(::stat((ckpt + "/snapshot-230").c_str(), &st), 0);
  EXPECT_EQ(newest_committed(ckpt)->step, 235);
}

// A full disk cuts the write as the file-size limit does here (EFBIG for ENOSPC): the
// snapshot is not committed, and resume finds the save before.
TEST(SnapshotWriteout, AWriteCutShortCommitsNothing) {
  temp_dir d;
  const std::string state = d / "5000.0-n1", ckpt = d / "ckpt";
  ASSERT_EQ(::mkdir(ckpt.c_str(), 0700), 0);
  ASSERT_EQ(::mkdir((ckpt + "/checkpoint-100").c_str(), 0700), 0);
  commit_marker m;
  m.step = 100;
  m.rank = 0;
  m.world = 1;
  commit_checkpoint(ckpt + "/checkpoint-100", m);
  {
    snapshot_writer sw(state, 0);
    snapshot_meta sm;
    sm.step = 235;
    sm.rank = 0;
    sm.world = 1;
    sm.ckpt_dir = ckpt;
    const std::string big(64 * 1024, 's');
    sw.write(sm, big.data(), big.size());
  }
  std::signal(SIGXFSZ, SIG_IGN);
  struct rlimit was {};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &was), 0);
  struct rlimit small = was;
  small.rlim_cur = 16 * 1024;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  const snapshot_writeout w = write_out_snapshots(state, true, now() + 60000);
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &was), 0);
  EXPECT_EQ(w.ranks, 0);
  ASSERT_EQ(w.failed.size(), 1u);
  EXPECT_EQ(w.failed[0].rank, 0);
  EXPECT_EQ(w.failed[0].step, 235);
  EXPECT_EQ(w.failed[0].why.rfind("cannot write " + ckpt + "/snapshot-235/rank-0.snapshot: ", 0), 0u)
      << w.failed[0].why;
  EXPECT_EQ(newest_committed(ckpt)->step, 100);
  struct stat st {};
  EXPECT_NE(::stat((ckpt + "/snapshot-235").c_str(), &st), 0) << "an empty directory stays";
  EXPECT_TRUE(whole_snapshots(state).empty());
}

TEST(SnapshotWriteout, PastItsBoundNothingIsCommitted) {
  temp_dir d;
  const std::string state = d / "5000.0-n1", ckpt = d / "ckpt";
  snapshots_of(state, 0, 230, 235, ckpt);
  const snapshot_writeout w = write_out_snapshots(state, true, now() - 1);
  EXPECT_EQ(w.ranks, 0);
  ASSERT_EQ(w.failed.size(), 2u);
  EXPECT_EQ(w.failed[0].why, "its bound came before the write ended");
  EXPECT_FALSE(newest_committed(ckpt));
}

TEST(SnapshotWriteout, ACheckpointDirectoryThatCannotBeMadeIsOneLine) {
  temp_dir d;
  d.write("file", "x");
  const std::string state = d / "5000.0-n1";
  snapshots_of(state, 0, 230, 235, d / "file/ckpt");
  const snapshot_writeout w = write_out_snapshots(state, true, now() + 60000);
  EXPECT_EQ(w.ranks, 0);
  ASSERT_EQ(w.failed.size(), 2u);
  EXPECT_EQ(w.failed[0].why.rfind("cannot make " + (d / "file/ckpt") + ": ", 0), 0u) << w.failed[0].why;
}

// A team's checkpoint directory: what another put under the temporary name (a FIFO,
// whose open would block) is not written through; the snapshot is not committed.
TEST(SnapshotWriteout, AFifoUnderTheTemporaryNameIsNotWaitedOn) {
  temp_dir d;
  const std::string state = d / "5000.0-n1", ckpt = d / "ckpt";
  ASSERT_EQ(::mkdir(ckpt.c_str(), 0777), 0);
  ASSERT_EQ(::mkdir((ckpt + "/snapshot-235").c_str(), 0777), 0);
  const std::string planted = ckpt + "/snapshot-235/.rank-0.snapshot.writing." + std::to_string(::getpid());
  ASSERT_EQ(::mkfifo(planted.c_str(), 0666), 0);
  snapshots_of(state, 0, 230, 235, ckpt);
  snapshots_of(state, 1, 230, 235, ckpt);
  const snapshot_writeout w = write_out_snapshots(state, true, now() + 60000);
  ASSERT_EQ(w.failed.size(), 1u);
  EXPECT_EQ(w.failed[0].step, 235);
  EXPECT_EQ(w.failed[0].why.rfind("cannot write in " + ckpt + "/snapshot-235: ", 0), 0u) << w.failed[0].why;
  struct stat st {};
  EXPECT_EQ(::lstat(planted.c_str(), &st), 0) << "another's file is not removed";
  EXPECT_EQ(newest_committed(ckpt)->step, 230);
}

// A checkpoint directory that is another user's link is not followed (it could lead to
// another run's saves), as resume_path() refuses it; the user's own link is.
TEST(SnapshotWriteout, AnotherUsersLinkAsTheCheckpointDirectoryIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to make another user's link";
  temp_dir d;
  const std::string state = d / "5000.0-n1", target = d / "elsewhere", link = d / "ckpt";
  ASSERT_EQ(::mkdir(target.c_str(), 0777), 0);
  ASSERT_EQ(::symlink(target.c_str(), link.c_str()), 0);
  ASSERT_EQ(::lchown(link.c_str(), 65534, 65534), 0);
  snapshots_of(state, 0, 230, 235, link);
  const snapshot_writeout w = write_out_snapshots(state, true, now() + 60000);
  ASSERT_EQ(w.failed.size(), 2u);
  EXPECT_NE(w.failed[0].why.find("not yours: refused"), std::string::npos) << w.failed[0].why;
  struct stat st {};
  EXPECT_NE(::stat((target + "/snapshot-235").c_str(), &st), 0);
}
