#include "bad_node_contrast.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <map>

#include "fixture.hpp"

using namespace trainctl;

namespace {

bad_node suspicion(const std::string& host, const std::string& array, std::int64_t when = 1000) {
  bad_node b;
  b.when = when;
  b.host = host;
  b.job = "9" + array;
  b.gpus = "-";
  b.reason = std::string(kSuspectedCrash) + " (SIGSEGV in a rank of a one-node job" + kOfArray + array +
             "; no node is kept off for a crash with nothing to compare with)";
  return b;
}

run_event task_end(const std::string& node, const std::string& reason, const std::string& job = "1") {
  run_event e;
  e.ms = 1;
  e.job = job;
  e.what = "task_end";
  e.reason = reason;
  e.node = node;
  return e;
}

// Run `job` of an array began with program `program` (its command line's hash).
run_event first_step(const std::string& job, std::int64_t program = 77) {
  run_event e;
  e.ms = 1;
  e.job = job;
  e.what = "first_step";
  e.step = 0;
  e.figures = {{"program", program}};
  return e;
}

// The crashed run of `array` (suspicion's job) and run 1 both ran program 77.
std::vector<run_event> with_programs(const std::string& array, std::vector<run_event> events) {
  events.insert(events.begin(), {first_step("9" + array), first_step("1")});
  return events;
}

}  // namespace

TEST(BadNodeContrast, TheArrayOfASuspicionIsItsProgram) {
  EXPECT_EQ(suspicion_array(suspicion("n1", "4242")), "4242");
  bad_node convicted = suspicion("n1", "4242");
  convicted.reason = "crashed (SIGSEGV in rank 1 of array 4242, the first death of the job; ...)";
  EXPECT_EQ(suspicion_array(convicted), "") << "only suspicions wait for a contrast";
  bad_node lone = suspicion("n1", "1");
  lone.reason = std::string(kSuspectedCrash) + " (SIGABRT in a rank of a one-node job; ...)";
  EXPECT_EQ(suspicion_array(lone), "") << "a job outside an array names no program";
}

// Programs 10 and 20 crashed on n1 and ran cleanly on n2 and n3: both count. Program 30
// crashed on n1 and on n2: it crashes anywhere. Program 40 never ran cleanly elsewhere
// (its only ok is on n1 itself, its other run failed). Program 50 has no events at all.
// Program 60's suspicion says its crash followed a rank.
TEST(BadNodeContrast, OnlyProgramsThatRanCleanlyElsewhereAndCrashedOnlyHereCount) {
  const std::map<std::string, std::vector<run_event>> events = {
      {"10", with_programs("10", {task_end("n1", "failed"), task_end("n2", "ok")})},
      {"20", with_programs("20", {task_end("n3", "preempted"), task_end("n3", "ok")})},
      {"30", with_programs("30", {task_end("n3", "ok")})},
      {"40", with_programs("40", {task_end("n1", "ok"), task_end("n2", "failed"), task_end("", "ok")})},
      {"60", with_programs("60", {task_end("n2", "ok")})},
  };
  const auto of = [&](const std::string& a) {
    const auto it = events.find(a);
    return it == events.end() ? std::vector<run_event>{} : it->second;
  };
  std::vector<bad_node> recent = {suspicion("n1", "10"), suspicion("n1", "20"), suspicion("n1", "30"),
                                  suspicion("n2", "30"), suspicion("n1", "40"), suspicion("n1", "50"),
                                  suspicion("n1", "60")};
  // Program 60's crash followed its rank here (crash_culprit): the program's, no evidence.
  recent.back().reason = std::string(kSuspectedCrash) + " (SIGSEGV in rank 1 of array 60, which died first on n3 " +
                         "before; " + kFollowsTheRank;
  const auto clean = programs_clean_elsewhere("n1", recent, of);
  ASSERT_EQ(clean.size(), 2u);
  EXPECT_EQ(clean[0].array + "@" + clean[0].clean_on, "10@n2");
  EXPECT_EQ(clean[1].array + "@" + clean[1].clean_on, "20@n3");
  EXPECT_TRUE(programs_clean_elsewhere("n2", recent, of).empty()) << "30 crashed on n1 too";
}

// On the files: one program is not enough; the second convicts n1 once, and a node
// convicted already is left alone. Run events from TRAINCTL_RUN_EVENTS_DIR.
TEST(BadNodeContrast, TwoProgramsConvictTheNodeOnceInTheMemory) {
  trainctl_test::temp_dir t;
  setenv("TRAINCTL_RUN_EVENTS_DIR", (t / "runs").c_str(), 1);
  const std::string path = t / "bad_nodes";
  for (const std::string array : {"10", "20"}) {
    std::string lines;
    for (const run_event& e : with_programs(array, {task_end("n2", "ok")})) lines += format_run_event(e);
    EXPECT_EQ(append_run_events(run_events_path(array), lines), "");
  }
  ASSERT_EQ(record_bad_node(path, suspicion("n1", "10")), "");
  EXPECT_EQ(convict_by_contrast(path, "n1", 2000, std::chrono::hours(24)), "") << "one program";
  ASSERT_EQ(record_bad_node(path, suspicion("n1", "20")), "");
  EXPECT_EQ(convict_by_contrast(path, "n1", 2000, std::chrono::hours(24)),
            "remembered n1 as a bad node: crashed in programs that ran cleanly on other nodes (array 10 ran cleanly "
            "on n2, array 20 ran cleanly on n2)");
  EXPECT_EQ(nodes_to_exclude(read_bad_nodes(path), 2000, std::chrono::hours(24), 4), std::vector<std::string>{"n1"});
  EXPECT_EQ(convict_by_contrast(path, "n1", 2001, std::chrono::hours(24)), "") << "convicted already";
  EXPECT_EQ(read_bad_nodes(path).size(), 3u);
  EXPECT_EQ(convict_by_contrast(path, "n1", 1000 + 25 * 3600, std::chrono::hours(24)), "")
      << "suspicions past the expiry count for nothing";
  unsetenv("TRAINCTL_RUN_EVENTS_DIR");
}

// Two sweeps: in each, task 1 (job 9<array>) crashed on n1 and task 2 (job 1), with
// other arguments, ran cleanly on n2. Another program's clean run proves nothing of the
// one that crashed, and neither does a run with no first step (no program to name).
TEST(BadNodeContrast, ASweepsTasksWithOtherArgumentsAreOtherPrograms) {
  const std::map<std::string, std::vector<run_event>> events = {
      {"10", {first_step("910", 1), first_step("1", 2), task_end("n2", "ok")}},
      {"20", {first_step("920", 3), first_step("1", 4), task_end("n2", "ok")}},
      {"30", {task_end("n2", "ok")}},  // the crashed run died before its first step
  };
  const auto of = [&](const std::string& a) { return events.at(a); };
  const std::vector<bad_node> recent = {suspicion("n1", "10"), suspicion("n1", "20"), suspicion("n1", "30")};
  EXPECT_TRUE(programs_clean_elsewhere("n1", recent, of).empty());
  using namespace std::string_literals;  // the command line's NULs kept
  EXPECT_EQ(program_id("python3\0train.py\0--lr\0000.1"s), program_id("python3\0train.py\0--lr\0000.1"s));
  EXPECT_NE(program_id("python3\0train.py\0--lr\0000.1"s), program_id("python3\0train.py\0--lr\0000.2"s));
  EXPECT_NE(program_id("python3\0train.py\0--lr\0000.1"s), program_id("python3\0train.py\0--lr0\0000.1"s))
      << "where the arguments part counts";
  EXPECT_LT(program_id("x"), 1000000000000000LL) << "15 digits at most: a figure of a run event";
  EXPECT_EQ(program_id(""), -1);
}
