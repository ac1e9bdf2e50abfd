// The notice flags with both sides in one test: the supervisor and the publisher write
// them, a rank's check() reads them.
#include "notice_fields.hpp"

#include <gtest/gtest.h>

#include <memory>

using namespace trainctl;

TEST(NoticeFields, ASupervisorsNoticeReachesTheRankAndBumpsTheSequence) {
  auto ns = std::make_unique<node_state>();
  init_header(*ns);
  const std::uint32_t seq = notice_fields::seq(*ns);
  notice_fields::raise(*ns, kFlagPreempted);
  EXPECT_EQ(valid_flags(*ns), kFlagPreempted) << "the rank's hot path";
  EXPECT_GT(notice_fields::seq(*ns), seq);
  notice_fields::raise(*ns, kFlagHang);
  EXPECT_EQ(notice_fields::flags(*ns), kFlagPreempted | kFlagHang) << "notices add up";
}

TEST(NoticeFields, ThePublishersOwnBitSaysWhetherItChanged) {
  auto ns = std::make_unique<node_state>();
  init_header(*ns);
  EXPECT_TRUE(notice_fields::set(*ns, kFlagExitSwitch, true));
  EXPECT_FALSE(notice_fields::set(*ns, kFlagExitSwitch, true)) << "already set";
  EXPECT_EQ(valid_flags(*ns), kFlagExitSwitch);
  EXPECT_TRUE(notice_fields::set(*ns, kFlagExitSwitch, false)) << "the kill switch removed";
  EXPECT_EQ(valid_flags(*ns), 0u);
}

TEST(NoticeFields, UnknownBitsOrNoHeaderReadAsNoFlags) {
  auto ns = std::make_unique<node_state>();
  init_header(*ns);
  notice_fields::raise(*ns, kFlagSignal | (1u << 30));
  EXPECT_FALSE(notice_fields::sane(*ns));
  EXPECT_EQ(valid_flags(*ns), 0u) << "another program's bytes are no exit";
  auto zeros = std::make_unique<node_state>();
  notice_fields::raise(*zeros, kFlagSignal);
  EXPECT_EQ(valid_flags(*zeros), 0u) << "no header";
}
