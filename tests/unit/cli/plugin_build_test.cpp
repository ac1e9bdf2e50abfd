// trainctl version's plugin line: found through slurm.conf's PlugStackConfig and the
// plugstack.conf lines (and the files they include), its build read from the file.
#include "plugin_build.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "build_id.hpp"

namespace trainctl::cli {
namespace {

class PluginBuildTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/trainctl-plugin-build-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) {
    const std::string path = dir_ + "/" + name;
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }
  // A plugin file: bytes around the marker, as a linker leaves it in .rodata.
  std::string plugin(const std::string& build) {
    return write("lib/trainctl_spank.so", std::string("\x7f"
                                                      "ELF junk\0",
                                                      10) +
                                              TRAINCTL_PLUGIN_BUILD_MARKER + build + std::string("\0more", 5));
  }
  std::string dir_;
};

TEST_F(PluginBuildTest, FindsTheLineThroughPlugStackConfigAndAnInclude) {
  const std::string so = plugin("0.3.0/14");
  write("etc/slurm.conf", "ClusterName=c\n# PlugStackConfig=/nowhere\nplugstackconfig = " + dir_ + "/etc/stack.conf\n");
  write("etc/stack.conf", "optional /usr/lib/other_spank.so\ninclude stack.d/*.conf\n");
  write("etc/stack.d/trainctl.conf", "# trainctl\noptional " + so + " default_signal=USR1  # ours\n");
  const plugin_found p = find_plugin(dir_ + "/etc/slurm.conf");
  EXPECT_EQ(p.conf, dir_ + "/etc/stack.conf");
  EXPECT_EQ(p.path, so);
  EXPECT_EQ(p.build, "0.3.0/14") << p.problem;
  build_id b;
  ASSERT_TRUE(parse_build(p.build, &b));
  EXPECT_EQ(describe(b), "trainctl 0.3.0 (node-state layout 14)");
}

TEST_F(PluginBuildTest, PlugstackBesideSlurmConfWhenItNamesNone) {
  const std::string so = plugin(TRAINCTL_BUILD_TEXT);
  write("etc/slurm.conf", "ClusterName=c\n");
  write("etc/plugstack.conf", "required " + so + "\n");
  const plugin_found p = find_plugin(dir_ + "/etc/slurm.conf");
  EXPECT_EQ(p.build, TRAINCTL_BUILD_TEXT) << p.problem;
  build_id b;
  ASSERT_TRUE(parse_build(p.build, &b));
  EXPECT_EQ(layout_mismatch(b, "the plugin", "this trainctl"), "");
}

TEST_F(PluginBuildTest, SaysWhyWhenThereIsNoPluginOrNoBuild) {
  write("etc/slurm.conf", "ClusterName=c\n");
  EXPECT_NE(find_plugin(dir_ + "/etc/slurm.conf").problem.find("SLURM loads no plugin here"), std::string::npos);
  write("etc/plugstack.conf", "# optional /x/trainctl_spank.so\n");
  EXPECT_NE(find_plugin(dir_ + "/etc/slurm.conf").problem.find("jobs here use trainctl-run"), std::string::npos);
  const std::string old = write("lib/old/trainctl_spank.so", std::string("\x7f"
                                                                         "ELF old plugin\0",
                                                                         15));
  write("etc/plugstack.conf", "optional " + old + "\n");
  const plugin_found p = find_plugin(dir_ + "/etc/slurm.conf");
  EXPECT_EQ(p.build, "");
  EXPECT_NE(p.problem.find("names no trainctl build"), std::string::npos) << p.problem;
  EXPECT_NE(find_plugin(dir_ + "/etc/none.conf").problem.find("cannot read"), std::string::npos);
}

TEST(BuildId, ParsesOnlyVersionSlashLayout) {
  build_id b;
  EXPECT_TRUE(parse_build("0.1.0/12", &b));
  EXPECT_EQ(b.version, "0.1.0");
  EXPECT_EQ(b.layout, 12);
  for (const char* bad : {"", "0.1.0", "/12", "0.1.0/", "0.1.0/x", "a.b/1", "0.1.0/1234567", "0.1.0/12/3"})
    EXPECT_FALSE(parse_build(bad, &b)) << bad;
}

TEST(BuildId, AMismatchNamesBothBuildsAndTheNewer) {
  build_id other{"9.9.9", 9999};
  const std::string line = layout_mismatch(other, "this node's supervisor (trainctl-run)", "this rank's library");
  EXPECT_NE(line.find("this node's supervisor (trainctl-run) is trainctl 9.9.9 (node-state layout 9999) and this "
                      "rank's library trainctl " TRAINCTL_BUILD_VERSION),
            std::string::npos)
      << line;
  EXPECT_NE(line.find("the newer is 9.9.9"), std::string::npos) << line;
}

// docs/changelog.md's newest heading is this build: a new node-state layout (or C ABI)
// is a new version with its own entry, which admins read before they mix packages.
TEST(Changelog, TheNewestEntryIsThisBuildAndEachVersionIsOnce) {
  std::ifstream in(TRAINCTL_CHANGELOG);
  ASSERT_TRUE(in) << TRAINCTL_CHANGELOG;
  std::vector<build_id> entries;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("## ", 0) != 0) continue;
    char version[32] = {};
    int layout = 0;
    ASSERT_EQ(std::sscanf(line.c_str(), "## %31s (node-state layout %d, C ABI TRAINCTL_0)", version, &layout), 2)
        << "not '## VERSION (node-state layout N, C ABI TRAINCTL_0)': " << line;
    entries.push_back({version, layout});
  }
  ASSERT_FALSE(entries.empty());
  EXPECT_EQ(entries[0].version + "/" + std::to_string(entries[0].layout), TRAINCTL_BUILD_TEXT)
      << "the node-state layout or the version changed: docs/changelog.md needs the new version's entry on top";
  for (size_t i = 1; i < entries.size(); ++i) {
    EXPECT_NE(entries[i].version, entries[i - 1].version);
    EXPECT_LE(entries[i].layout, entries[i - 1].layout) << entries[i].version;
  }
}

}  // namespace
}  // namespace trainctl::cli
