// The controller's side of snapshots: kept only where a supervisor writes them out, in
// the two slots beside the node state, the newest two.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <stdexcept>

#include "fixture.hpp"
#include "snapshot_store.hpp"
#include "trainctl/controller.hpp"

using namespace trainctl;
using trainctl_test::temp_dir;

namespace {

config one_rank(const temp_dir& t) {
  config c;
  c.set("state_path", t / "state");
  c.set("signals", "none");
  c.set("rank", "0");
  c.set("world_size", "1");
  return c;
}

}  // namespace

TEST(Snapshots, WithoutASupervisorNothingIsKept) {
  temp_dir t;
  unsetenv("TRAINCTL_STATE");
  controller ctl(one_rank(t));
  EXPECT_FALSE(ctl.snapshot(5, "state", 5, t / "ckpt"));
  EXPECT_TRUE(whole_snapshots(t / "state").empty());
}

TEST(Snapshots, UnderASupervisorTheTwoSlotsHoldTheNewestTwo) {
  temp_dir t;
  setenv("TRAINCTL_STATE", (t / "state").c_str(), 1);  // as the supervisor exports it
  {
    controller ctl(one_rank(t));
    for (const std::int64_t step : {5, 10, 15}) {
      const std::string bytes = "step " + std::to_string(step);
      EXPECT_TRUE(ctl.snapshot(step, bytes.data(), bytes.size(), t / "ckpt"));
    }
    EXPECT_THROW(ctl.snapshot(-1, "x", 1, t / "ckpt"), std::invalid_argument);
    EXPECT_THROW(ctl.snapshot(20, "x", 1, "ckpt"), std::invalid_argument);  // relative: refused
  }
  unsetenv("TRAINCTL_STATE");
  std::vector<snapshot_slot> all = whole_snapshots(t / "state");
  ASSERT_EQ(all.size(), 2u);
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.meta.step < b.meta.step; });
  EXPECT_EQ(all[0].meta.step, 10);
  EXPECT_EQ(all[1].meta.step, 15);
  EXPECT_EQ(all[1].meta.world, 1);
  EXPECT_EQ(all[1].meta.ckpt_dir, t / "ckpt");
  EXPECT_EQ(all[1].bytes, 7u);
}
