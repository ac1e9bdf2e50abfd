#include "did_you_mean.hpp"

#include <gtest/gtest.h>

#include "cli_text.hpp"

using namespace trainctl;

TEST(EditDistance, CountsInsertsRemovesReplacementsAndSwaps) {
  EXPECT_EQ(edit_distance("status", "status"), 0);
  EXPECT_EQ(edit_distance("stauts", "status"), 1);  // two neighbours swapped
  EXPECT_EQ(edit_distance("staus", "status"), 1);
  EXPECT_EQ(edit_distance("statuss", "status"), 1);
  EXPECT_EQ(edit_distance("ststus", "status"), 1);
  EXPECT_EQ(edit_distance("", "run"), 3);
  EXPECT_EQ(edit_distance("run", ""), 3);
  EXPECT_EQ(edit_distance("report", "run"), 5);
}

const std::vector<std::string> kVerbs{"help", "run", "status", "stacks", "report", "bad-nodes", "version"};

TEST(ClosestWord, NamesTheVerbAMistypedOneMeant) {
  EXPECT_EQ(closest_word("stauts", kVerbs), "status");
  EXPECT_EQ(closest_word("stacsk", kVerbs), "stacks");
  EXPECT_EQ(closest_word("reprot", kVerbs), "report");
  EXPECT_EQ(closest_word("badnodes", kVerbs), "bad-nodes");
  EXPECT_EQ(closest_word("rn", kVerbs), "run");
  EXPECT_EQ(closest_word("vers", kVerbs), "version");  // the start of one word only
}

TEST(ClosestWord, SaysNothingWhenNoWordIsLikelyMeant) {
  EXPECT_EQ(closest_word("status", kVerbs), "");  // accepted as it is
  EXPECT_EQ(closest_word("", kVerbs), "");
  EXPECT_EQ(closest_word("x", kVerbs), "");
  EXPECT_EQ(closest_word("submit", kVerbs), "");
  EXPECT_EQ(closest_word("sta", kVerbs), "");  // the start of status and stacks
  EXPECT_EQ(closest_word("st", kVerbs), "");   // 2 edits from several, too short to say
  EXPECT_EQ(closest_word("run", {}), "");
}

TEST(ClosestWord, FindsFlagsAndChecksAsGitAndKubectlWould) {
  const std::vector<std::string> flags{"--graceful-exit", "--kill-switch", "--save-switch", "--hang-timeout"};
  EXPECT_EQ(closest_word("--graceful-exti", flags), "--graceful-exit");
  EXPECT_EQ(closest_word("--kill-swich", flags), "--kill-switch");
  EXPECT_EQ(closest_word("--hang", flags), "--hang-timeout");
  EXPECT_EQ(closest_word("--time", flags), "");
  const std::vector<std::string> checks{"job-running", "log-stall", "slow-nodes", "bad-nodes", "fs", "memory"};
  EXPECT_EQ(closest_word("job-runing", checks), "job-running");
  EXPECT_EQ(closest_word("memroy", checks), "memory");
  EXPECT_EQ(closest_word("f", checks), "");
}

// A command line CLI11 refuses: the line the tools print for it (or the subcommand hint).
std::string refused(CLI::App& app, std::vector<std::string> words, bool subcommand) {
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(&w[0]);
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::ParseError& e) {
    const int argc = static_cast<int>(argv.size());
    return subcommand ? subcommand_hint(app, argc, argv.data(), "a command")
                      : refusal(app, e.what(), argc, argv.data());
  }
  return "accepted";
}

TEST(CliHint, NamesTheFlagOfTheAppOrItsSubcommandAndOnlyOneTheErrorNames) {
  CLI::App app;
  std::string s;
  app.add_option("--graceful-exit", s);
  auto* check = app.add_subcommand("job-running");
  check->add_option("--job-name", s);
  app.require_subcommand(1);
  EXPECT_EQ(refused(app, {"prog", "--graceful-exti=5", "job-running"}, false),
            "unknown option --graceful-exti (did you mean --graceful-exit?)");
  app.clear();
  EXPECT_EQ(refused(app, {"prog", "job-running", "--job-nam", "x"}, false),
            "unknown option --job-nam (did you mean --job-name?)");
  app.clear();
  EXPECT_EQ(refused(app, {"prog", "job-running", "--frobnicate"}, false), "unknown option --frobnicate");
}

TEST(CliHint, NamesTheSubcommandOnlyWhereNoneWasGiven) {
  CLI::App app;
  std::string s;
  app.add_option("--config", s);
  app.add_subcommand("job-running");
  app.add_subcommand("memory");
  app.require_subcommand(1);
  EXPECT_EQ(refused(app, {"prog", "memroy"}, true),
            "'memroy' is not a command (did you mean 'memory'?); accepted: job-running, memory");
  app.clear();
  EXPECT_EQ(refused(app, {"prog", "frobnicate"}, true), "'frobnicate' is not a command; accepted: job-running, memory");
  app.clear();
  EXPECT_EQ(refused(app, {"prog", "--config", "memroy"}, true), "");  // an option's value, maybe
}

// An option nobody knows is the line, whatever CLI11 stumbled on first (a required
// option of the check, a "--" it lists among the extras), as GNU tools say it.
TEST(CliHint, AnUnknownOptionComesFirstInTheRefusal) {
  CLI::App app;
  std::string s;
  std::vector<std::string> command;
  app.add_option("--graceful-exit", s);
  app.add_option("command", command);
  auto* check = app.add_subcommand("job-running");
  check->add_option("--job-name", s)->required();
  const auto refusal_of = [&app](std::vector<const char*> words) {
    std::vector<char*> argv;
    for (const char* w : words) argv.push_back(const_cast<char*>(w));
    const int argc = static_cast<int>(argv.size());
    app.clear();
    try {
      app.parse(argc, argv.data());
    } catch (const CLI::ParseError& e) {
      return refusal(app, e.what(), argc, argv.data());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(refusal_of({"prog", "job-running", "--job-nam", "x"}),
            "unknown option --job-nam (did you mean --job-name?)");
  EXPECT_EQ(refusal_of({"prog", "--graceful-exti=5", "--", "true"}),
            "unknown option --graceful-exti (did you mean --graceful-exit?)");
  EXPECT_EQ(refusal_of({"prog", "--frobnicate", "job-running"}), "unknown option --frobnicate");
  EXPECT_EQ(refusal_of({"prog", "job-running", "--", "--not-ours"}).find("unknown option"), std::string::npos)
      << "what follows -- is the command's";
}
