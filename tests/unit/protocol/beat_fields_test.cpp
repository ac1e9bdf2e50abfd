// The heartbeats and phases with both sides in one test: a rank's controller writes its
// slot and the node's lengths, the supervisor reads them (the hang clock, the budgets).
#include "beat_fields.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <memory>

#include "save_fields.hpp"
#include "straggler_fields.hpp"

using namespace trainctl;

TEST(BeatFields, ARanksAgreementIsWhatTheSupervisorReads) {
  auto ns = std::make_unique<node_state>();
  init_header(*ns);
  const int i = beat_fields::claim(*ns, getpid());
  ASSERT_GE(i, 0);
  rank_beat& b = ns->beats[i];
  EXPECT_EQ(beat_fields::of_pid(*ns, getpid()), nullptr) << "no agreement yet: not a rank the supervisor judges";
  EXPECT_EQ(beat_fields::read(b).rank, -1);
  beat_fields::saw_step(b, 41);
  beat_fields::saw_step(b, 42);
  beat_fields::agreed(b, 3, 1'000'000);
  beat_fields::set_step_times(b, 25'000, 2);
  ASSERT_EQ(beat_fields::of_pid(*ns, getpid()), &b);
  const beat_fields::beat_view v = beat_fields::read(b);
  EXPECT_EQ(v.pid, getpid());
  EXPECT_EQ(v.rank, 3);
  EXPECT_EQ(v.step, 42);
  EXPECT_EQ(v.beat_ms, 1'000'000);
  EXPECT_EQ(v.step_us, 25'000);
  EXPECT_EQ(v.slow, 2);
  beat_fields::show_phase(b, kPhaseSave, 1'000'500);
  beat_fields::set_exiting(b, true);
  EXPECT_EQ(beat_fields::read(b).phase, kPhaseSave);
  EXPECT_EQ(beat_fields::read(b).phase_ms, 1'000'500);
  EXPECT_TRUE(beat_fields::read(b).exiting);
  EXPECT_EQ(beat_fields::bad(*ns), "");
}

TEST(BeatFields, AGoneProcesssSlotIsClaimedAgainWithEveryConcernCleared) {
  auto ns = std::make_unique<node_state>();
  init_header(*ns);
  for (int i = 0; i < kMaxRanks; ++i) ns->beats[i].pid.store(getpid());  // every slot taken by a live process
  const pid_t gone = fork();
  if (gone == 0) _exit(0);
  ASSERT_GT(gone, 0);
  waitpid(gone, nullptr, 0);
  rank_beat& b = ns->beats[5];
  b.pid.store(gone);
  beat_fields::agreed(b, 1, 77);
  save_fields::asked(b, 10, 70);
  straggler_fields::report(b, 9, 300, 100);
  EXPECT_EQ(beat_fields::claim(*ns, 999'999), 5) << "the dead process's slot";
  EXPECT_EQ(beat_fields::read(b).beat_ms, 0);
  EXPECT_EQ(beat_fields::read(b).rank, -1);
  EXPECT_EQ(save_fields::read(b).asked_step, -1);
  EXPECT_EQ(straggler_fields::last_report(b).reports, 0) << "the last process's finding is not this one's";
  b.pid.store(getpid());
  EXPECT_EQ(beat_fields::claim(*ns, 888'888), -1) << "all taken by live processes";
}

TEST(BeatFields, TheNodesLengthsAreOnlyRaised) {
  auto ns = std::make_unique<node_state>();
  init_header(*ns);
  beat_fields::learn_save_ms(*ns, 9000);
  beat_fields::learn_save_ms(*ns, 4000);
  beat_fields::learn_quiet_ms(*ns, 1200);
  EXPECT_EQ(beat_fields::longest_save_ms(*ns), 9000);
  EXPECT_EQ(beat_fields::longest_quiet_ms(*ns), 1200);
  const int eval = beat_fields::claim_phase(*ns, "eval");
  ASSERT_GE(eval, 0);
  EXPECT_EQ(beat_fields::claim_phase(*ns, "eval"), eval) << "another rank marks the same phase";
  beat_fields::learn_phase_ms(*ns, eval, 30'000);
  beat_fields::learn_phase_ms(*ns, eval, 20'000);
  beat_fields::learn_phase_ms(*ns, kMaxPhases, 5);  // past the table: nothing to learn, no write
  EXPECT_EQ(beat_fields::phase_name(*ns, eval), "eval");
  EXPECT_EQ(beat_fields::phase_name(*ns, kMaxPhases), "");
  const auto learnt = beat_fields::learnt_phases(*ns);
  ASSERT_EQ(learnt.size(), 1u);
  EXPECT_EQ(learnt[0].first, "eval");
  EXPECT_EQ(learnt[0].second, 30'000);
  EXPECT_EQ(beat_fields::claim_phase(*ns, "-eval"), -1) << "not a phase name";
}

TEST(BeatFields, JunkOverAHeartbeatIsNamed) {
  auto ns = std::make_unique<node_state>();
  init_header(*ns);
  ns->beats[7].phase.store(kPhaseNamed + kMaxPhases + 1);
  EXPECT_EQ(beat_fields::bad(*ns), "a heartbeat slot's fields");
  ns->beats[7].phase.store(0);
  ns->beats[7].saves.waiting.store(5);
  EXPECT_EQ(beat_fields::bad(*ns), "a heartbeat slot's fields") << "a save field of the slot";
  ns->beats[7].saves.waiting.store(0);
  ns->phases[2].longest_ms.store(10);  // a free phase slot that holds data
  EXPECT_EQ(beat_fields::bad(*ns), "a phase slot's fields");
}
