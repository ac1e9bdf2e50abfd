// A rank's two snapshot slots: the newest whole one survives a write cut half-way.
#include "snapshot_store.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "fixture.hpp"

using namespace trainctl;
using trainctl_test::temp_dir;

namespace {

snapshot_meta meta_at(std::int64_t step, std::int64_t rank = 1) {
  snapshot_meta m;
  m.step = step;
  m.rank = rank;
  m.world = 4;
  m.run = "c-5000-20261203T190000";
  m.attempt = "5000.0";
  m.ckpt_dir = "/scratch/run/checkpoints";
  return m;
}

std::string bytes_of(const snapshot_slot& s) {
  std::ifstream in(s.path, std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return all.substr(kSnapshotHeaderBytes);
}

}  // namespace

TEST(SnapshotStore, TheHeaderReadsBackAndRefusesAnythingElse) {
  const snapshot_meta m = meta_at(235);
  snapshot_meta back;
  std::uint64_t bytes = 0;
  const std::string h = format_snapshot_header(m, 4096);
  ASSERT_TRUE(parse_snapshot_header(h, &back, &bytes));
  EXPECT_EQ(back.step, 235);
  EXPECT_EQ(back.rank, 1);
  EXPECT_EQ(back.world, 4);
  EXPECT_EQ(back.run, m.run);
  EXPECT_EQ(back.attempt, m.attempt);
  EXPECT_EQ(back.ckpt_dir, m.ckpt_dir);
  EXPECT_EQ(bytes, 4096u);
  std::string changed = h;
  changed[changed.find("step=235") + 5] = '9';  // a torn or altered header: its sum fails
  EXPECT_FALSE(parse_snapshot_header(changed, &back, &bytes));
  EXPECT_FALSE(parse_snapshot_header(std::string(kSnapshotHeaderBytes, '\0'), &back, &bytes));  // cleared
  snapshot_meta bad = m;
  bad.rank = 4;  // not below its world
  EXPECT_FALSE(parse_snapshot_header(format_snapshot_header(bad, 1), &back, &bytes));
}

TEST(SnapshotStore, WritesAlternateSoTheSnapshotBeforeStaysWhole) {
  temp_dir d;
  const std::string state = d / "5000.0-n1";
  snapshot_writer w(state, 1);
  w.write(meta_at(230), "step 230", 8);
  EXPECT_EQ(w.next_slot(), 1);
  w.write(meta_at(235), "step 235!", 9);
  EXPECT_EQ(w.next_slot(), 0);
  auto all = whole_snapshots(state);
  ASSERT_EQ(all.size(), 2u);
  if (all[0].meta.step > all[1].meta.step) std::swap(all[0], all[1]);
  EXPECT_EQ(all[0].meta.step, 230);
  EXPECT_EQ(bytes_of(all[0]), "step 230");
  EXPECT_EQ(all[1].meta.step, 235);
  EXPECT_EQ(bytes_of(all[1]), "step 235!");
  // The third write goes over 230's slot; cut after its header was cleared, the slot
  // holds nothing whole and 235 is still there.
  const int fd = ::open(snapshot_slot_path(state, 1, 0).c_str(), O_WRONLY | O_NOFOLLOW);
  ASSERT_GE(fd, 0);
  const std::string zeros(kSnapshotHeaderBytes, '\0');
  ASSERT_EQ(::pwrite(fd, zeros.data(), zeros.size(), 0), static_cast<ssize_t>(zeros.size()));
  ::close(fd);
  all = whole_snapshots(state);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].meta.step, 235);
  // Another job step's slots in the same directory are not this one's.
  snapshot_writer other(d / "5001.0-n1", 0);
  other.write(meta_at(7, 0), "x", 1);
  EXPECT_EQ(whole_snapshots(state).size(), 1u);
  EXPECT_EQ(remove_snapshots(state), 2);
  EXPECT_TRUE(whole_snapshots(state).empty());
  EXPECT_EQ(whole_snapshots(d / "5001.0-n1").size(), 1u);
}

TEST(SnapshotStore, AShorterSnapshotLeavesNoOldBytesBehind) {
  temp_dir d;
  const std::string state = d / "s";
  snapshot_writer w(state, 0);
  const std::string big(100000, 'b');
  w.write(meta_at(5, 0), big.data(), big.size());
  w.write(meta_at(10, 0), big.data(), big.size());
  w.write(meta_at(15, 0), "small", 5);  // over step 5's slot
  struct stat st {};
  ASSERT_EQ(::stat(snapshot_slot_path(state, 0, 0).c_str(), &st), 0);
  EXPECT_EQ(static_cast<std::size_t>(st.st_size), kSnapshotHeaderBytes + 5);
}

TEST(SnapshotStore, ALinkInASlotsPlaceIsNotFollowed) {
  temp_dir d;
  const std::string state = d / "s";
  d.write("elsewhere", "keep me");
  ASSERT_EQ(::symlink((d / "elsewhere").c_str(), snapshot_slot_path(state, 0, 0).c_str()), 0);
  snapshot_writer w(state, 0);
  EXPECT_THROW(w.write(meta_at(5, 0), "x", 1), std::system_error);
  std::ifstream in(d / "elsewhere");
  std::string text;
  std::getline(in, text);
  EXPECT_EQ(text, "keep me");
}

TEST(SnapshotStore, AHeaderThatCannotFitIsRefused) {
  temp_dir d;
  snapshot_writer w(d / "s", 0);
  snapshot_meta m = meta_at(5, 0);
  m.ckpt_dir = "/" + std::string(5000, 'a');
  EXPECT_THROW(w.write(m, "x", 1), std::invalid_argument);
  m.ckpt_dir = "/a\nb";
  EXPECT_THROW(w.write(m, "x", 1), std::invalid_argument);
}
