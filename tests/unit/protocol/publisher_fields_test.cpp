// The publisher role's fields with both sides in one test: a holder takes the role and
// beats, another process judges it stale or not, and a supervisor says it holds it.
#include "publisher_fields.hpp"

#include <unistd.h>

#include <gtest/gtest.h>

#include <memory>

using namespace trainctl;

namespace {
std::uint64_t id_of(pid_t pid, std::uint32_t serial) { return (static_cast<std::uint64_t>(pid) << 32) | serial; }
}  // namespace

TEST(PublisherFields, TheHolderBeatsAndOthersJudgeItByItsInterval) {
  auto ns = std::make_unique<node_state>();
  init_header(*ns);
  EXPECT_TRUE(publisher_stale(*ns, 1'000'000, 0)) << "nobody holds it";
  const std::uint64_t me = id_of(getpid(), 1);
  ASSERT_TRUE(publisher_fields::take(*ns, 0, me, 1'000'000));
  EXPECT_EQ(publisher_fields::holder_pid(publisher_fields::holder(*ns)), getpid());
  publisher_fields::set_interval(*ns, 1000);
  EXPECT_EQ(publisher_stale_after_ms(*ns), 4000);
  EXPECT_FALSE(publisher_stale(*ns, 1'003'000, publisher_stale_after_ms(*ns)));
  EXPECT_TRUE(publisher_stale(*ns, 1'004'001, publisher_stale_after_ms(*ns))) << "4 s without a beat";
  publisher_fields::beat(*ns, 1'004'000);
  EXPECT_FALSE(publisher_stale(*ns, 1'004'001, publisher_stale_after_ms(*ns)));
}

TEST(PublisherFields, TheRoleIsTakenFromWhatWasReadAndGivenBackOnlyByItsHolder) {
  auto ns = std::make_unique<node_state>();
  init_header(*ns);
  const std::uint64_t a = id_of(getpid(), 1), b = id_of(getpid(), 2);
  ASSERT_TRUE(publisher_fields::take(*ns, 0, a, 1));
  EXPECT_FALSE(publisher_fields::take(*ns, 0, b, 2)) << "b read an empty role that a has taken since";
  publisher_fields::set_supervised(*ns);
  EXPECT_TRUE(publisher_fields::supervised(*ns));
  publisher_fields::give_back(*ns, b);
  EXPECT_EQ(publisher_fields::holder(*ns), a) << "not b's to give";
  ASSERT_TRUE(publisher_fields::take(*ns, a, b, 3)) << "a takeover from a stale holder";
  EXPECT_FALSE(publisher_fields::supervised(*ns)) << "the new holder is no supervisor until it says so";
  publisher_fields::give_back(*ns, b);
  EXPECT_EQ(publisher_fields::holder(*ns), 0u);
}
