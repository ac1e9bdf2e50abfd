#include "trainctl/controller.hpp"

#include <cstdlib>

#include "fixture.hpp"

using namespace trainctl;
using trainctl_test::scoped_env;

namespace {

bool has_line(const config& c, const std::string& var, const std::string& fallback) {
  for (const auto& w : c.warnings())
    if (w.find(var) != std::string::npos && w.find("accepted") != std::string::npos &&
        w.find(fallback) != std::string::npos && w.find('\n') == std::string::npos)
      return true;
  return false;
}
}  // namespace

TEST(Config, MalformedEnvironmentGivesOneLineAndTheFallback) {
  scoped_env a("TRAINCTL_DEADLINE", "soon");
  scoped_env b("TRAINCTL_MEMORY_THRESHOLD", "-5%");
  scoped_env c("TRAINCTL_POLL_INTERVAL", "fast");
  scoped_env d("TRAINCTL_SIGNALS", "NOPE");
  scoped_env e("TRAINCTL_CHECK_EVERY", "0");
  scoped_env f("TRAINCTL_GPU_MIN_FREE", "-1G");
  config cfg = config::from_env();
  EXPECT_TRUE(has_line(cfg, "TRAINCTL_DEADLINE: 'soon'", "using no deadline"));
  EXPECT_TRUE(has_line(cfg, "TRAINCTL_MEMORY_THRESHOLD", "using no memory check"));
  EXPECT_TRUE(has_line(cfg, "TRAINCTL_POLL_INTERVAL", "using 10s"));
  EXPECT_TRUE(has_line(cfg, "TRAINCTL_SIGNALS", "using USR1,TERM"));
  EXPECT_TRUE(has_line(cfg, "TRAINCTL_CHECK_EVERY", "using 10"));
  EXPECT_TRUE(has_line(cfg, "TRAINCTL_GPU_MIN_FREE", "using no GPU memory check"));
  EXPECT_EQ(cfg.get("deadline"), "");
  EXPECT_EQ(cfg.get("poll_interval"), "10s");
  EXPECT_EQ(cfg.get("signals"), "USR1,TERM");
}

TEST(Config, GoodEnvironmentIsRead) {
  scoped_env a("KILL_SWITCH", "/scratch/run/KILL");
  scoped_env b("TRAINCTL_DEADLINE", "1767225600");
  scoped_env c("TRAINCTL_MEMORY_MIN_FREE", "5%");
  scoped_env d("RANK", "3");
  config cfg = config::from_env();
  EXPECT_TRUE(cfg.warnings().empty());
  EXPECT_EQ(cfg.get("kill_switch"), "/scratch/run/KILL");
  EXPECT_EQ(cfg.get("memory_min_free"), "5%");
  EXPECT_EQ(cfg.get("rank"), "3");
}

// A percentage means "left" everywhere; the old name, whose % meant "in use", is read
// as what it meant, with a line saying so.
TEST(Config, TheOldMemoryThresholdIsConvertedAndSaysSo) {
  scoped_env c("TRAINCTL_MEMORY_THRESHOLD", "95%");
  config cfg = config::from_env();
  EXPECT_EQ(cfg.get("memory_min_free"), "5%");
  EXPECT_EQ(cfg.get("memory_threshold"), "95%");
  ASSERT_EQ(cfg.warnings().size(), 1u);
  EXPECT_NE(cfg.warnings()[0].find("TRAINCTL_MEMORY_MIN_FREE=5%"), std::string::npos) << cfg.warnings()[0];
  config sized;
  sized.set("memory_threshold", "2G");
  EXPECT_EQ(sized.get("memory_min_free"), "2.0G") << "a size always meant left";
}

TEST(Config, SetValidatesAndNamesTheKey) {
  config cfg;
  try {
    cfg.set("poll_interval", "-1s");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("poll_interval: '-1s' is negative"), std::string::npos) << e.what();
  }
  EXPECT_THROW(cfg.set("no_such_key", "1"), std::invalid_argument);
  EXPECT_THROW(cfg.set("signals", "KILL"), std::invalid_argument);
  cfg.set("kill_switch", "relative/KILL");
  EXPECT_EQ(cfg.get("kill_switch").front(), '/') << "relative paths are made absolute at configuration";
}

TEST(Config, CopiesAreIndependent) {
  config a;
  a.set("check_every", "5");
  config b = a;
  b.set("check_every", "7");
  EXPECT_EQ(a.get("check_every"), "5");
  EXPECT_EQ(b.get("check_every"), "7");
}

// A fault signal as a notice made a segfault loop forever in the handler.
TEST(Config, FaultSignalsAreNotNotices) {
  scoped_env d("TRAINCTL_SIGNALS", "USR1,11");
  config cfg = config::from_env();
  EXPECT_TRUE(has_line(cfg, "TRAINCTL_SIGNALS", "using USR1,TERM"));
  EXPECT_EQ(cfg.get("signals"), "USR1,TERM");
  EXPECT_THROW(cfg.set("poll_interval", "50ms"), std::invalid_argument);
}
