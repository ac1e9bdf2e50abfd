// The switches' fields with both sides in one test: ranks register a switch, the
// publisher looks at the file, every rank reads what it counted.
#include "switch_fields.hpp"

#include <gtest/gtest.h>

#include <memory>

using namespace trainctl;

TEST(SwitchFields, OneSlotPerSwitchWhoeverRegistersIt) {
  auto ns = std::make_unique<node_state>();
  init_header(*ns);
  const int kill = switch_fields::claim(*ns, switch_kind::exit, "kill-switch", "/x/kill");
  ASSERT_GE(kill, 0);
  EXPECT_EQ(switch_fields::claim(*ns, switch_kind::exit, "kill-switch", "/x/kill"), kill) << "another rank";
  const int save = switch_fields::claim(*ns, switch_kind::save, "save-switch", "/x/kill");
  EXPECT_NE(save, kill) << "the same path as another kind is another switch";
  EXPECT_TRUE(switch_fields::holds(*ns, kill, switch_kind::exit));
  EXPECT_FALSE(switch_fields::holds(*ns, kill, switch_kind::save));
  EXPECT_FALSE(switch_fields::holds(*ns, 7, switch_kind::exit)) << "a free slot";
  EXPECT_EQ(switch_fields::claim(*ns, switch_kind::exit, "k", "/" + std::string(kMaxPath, 'p')), -1);
  const auto ready = switch_fields::ready(*ns);
  ASSERT_EQ(ready.size(), 2u);
  EXPECT_EQ(ready[0].name, "kill-switch");
  EXPECT_EQ(ready[0].path, "/x/kill");
  EXPECT_EQ(switch_fields::bad(*ns), "");
}

TEST(SwitchFields, AKillSwitchIsPresentWhileItsFileIs) {
  auto ns = std::make_unique<node_state>();
  init_header(*ns);
  const int kill = switch_fields::claim(*ns, switch_kind::exit, "kill-switch", "/x/kill");
  EXPECT_TRUE(switch_fields::look_exit(*ns, kill, 5'000'000'000));
  EXPECT_FALSE(switch_fields::look_exit(*ns, kill, 5'000'000'000)) << "no change";
  EXPECT_EQ(switch_fields::token(*ns, kill), 5'000'000'000);
  EXPECT_TRUE(switch_fields::look_exit(*ns, kill, 0)) << "removed";
  EXPECT_EQ(switch_fields::token(*ns, kill), 0);
}

TEST(SwitchFields, EachTouchOfASaveSwitchCountsOnce) {
  auto ns = std::make_unique<node_state>();
  init_header(*ns);
  const int save = switch_fields::claim(*ns, switch_kind::save, "save-switch", "/x/save");
  constexpr std::int64_t kTouch = 1'000'000;
  EXPECT_TRUE(switch_fields::look_save(*ns, save, 10 * kTouch, kTouch));
  EXPECT_FALSE(switch_fields::look_save(*ns, save, 10 * kTouch, kTouch)) << "the same mtime: one touch";
  EXPECT_FALSE(switch_fields::look_save(*ns, save, 10 * kTouch + 5, kTouch)) << "within one touch's resolution";
  EXPECT_FALSE(switch_fields::look_save(*ns, save, 0, kTouch)) << "the file removed: no touch";
  EXPECT_TRUE(switch_fields::look_save(*ns, save, 30 * kTouch, kTouch));
  EXPECT_EQ(switch_fields::count(*ns, save), 2) << "what every rank saves for";
  switch_fields::set_save_total(*ns, 2);
  EXPECT_EQ(switch_fields::bad(*ns), "");
}

TEST(SwitchFields, AFallenBackRankSeedsItsPrivateSlot) {
  auto priv = std::make_unique<node_state>();
  init_header(*priv);
  const int save = switch_fields::claim(*priv, switch_kind::save, "save-switch", "/x/save");
  switch_fields::seed(*priv, save, 7'000'000'000, 3);
  EXPECT_EQ(switch_fields::count(*priv, save), 3);
  EXPECT_FALSE(switch_fields::look_save(*priv, save, 7'000'000'000, 1'000'000)) << "seen already";
}

TEST(SwitchFields, JunkOverASlotIsNamed) {
  auto ns = std::make_unique<node_state>();
  init_header(*ns);
  ns->slots[3].token.store(42);  // a free slot that holds data
  EXPECT_EQ(switch_fields::bad(*ns), "a free switch slot that holds data");
  ns->slots[3].token.store(0);
  ns->slots[3].state.store(9);
  EXPECT_EQ(switch_fields::bad(*ns), "a switch slot's state");
  EXPECT_FALSE(switch_fields::holds(*ns, 3, switch_kind::exit));
}
