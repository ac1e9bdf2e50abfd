#include "dir_entries.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>

#include "fixture.hpp"
#include "owned_fd.hpp"

using namespace trainctl;

// Every name, whatever was read through the descriptor before (a duplicate shares the
// offset of an earlier read), and the descriptor stays the caller's.
TEST(DirEntries, EveryNameFromTheStartAndTheDescriptorStaysOpen) {
  trainctl_test::temp_dir t;
  t.write("a", "1");
  t.write("b", "2");
  ASSERT_EQ(symlink("/etc/passwd", (t / "link").c_str()), 0);
  const owned_fd dir(open(t.path().c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  ASSERT_TRUE(dir);
  std::vector<std::string> first = dir_entry_names(dir.get());
  std::sort(first.begin(), first.end());
  EXPECT_EQ(first, (std::vector<std::string>{"a", "b", "link"})) << "names only: the caller checks what each is";
  std::vector<std::string> again = dir_entry_names(dir.get());
  EXPECT_EQ(again.size(), 3u);
  EXPECT_EQ(fcntl(dir.get(), F_GETFD), FD_CLOEXEC) << "still open, still the caller's";
  EXPECT_TRUE(dir_entry_names(-1).empty());
}
