#include "hostlist.hpp"

#include <gtest/gtest.h>

using namespace trainctl;
using names = std::vector<std::string>;

TEST(Hostlist, ExpandsWhatSlurmWrites) {
  EXPECT_EQ(expand_hostlist("n1"), names({"n1"}));
  EXPECT_EQ(expand_hostlist("n[1-3]"), names({"n1", "n2", "n3"}));
  EXPECT_EQ(expand_hostlist("n[1-2,7],gpu[08-10]"), names({"n1", "n2", "n7", "gpu08", "gpu09", "gpu10"}));
  EXPECT_EQ(expand_hostlist("a,b[3]x"), names({"a", "b3x"}));
}

TEST(Hostlist, MalformedOrTooLongIsNothing) {
  for (const char* bad : {"", "n[1-", "n[3-1]", "n[a-b]", "n[1]]", "n[[1]]", "n[1][2]", ",n1", "n1,,n2"})
    EXPECT_TRUE(expand_hostlist(bad).empty()) << bad;
  EXPECT_TRUE(expand_hostlist("n[1-100]", 10).empty());
  EXPECT_EQ(expand_hostlist("n[1-10]", 10).size(), 10U);
}
