// How often to save, from the run's own numbers (`trainctl report`): the save cost
// measured, the interruptions observed, and the interval Young and Daly's rule gives.
//
// Daly (2006), first order: with a save costing d and a mean time between
// interruptions M, the interval t = sqrt(2 d M) - d (for d < M / 2; else M) makes the
// expected share of time lost to saves and to rework, d / t + t / (2 M), smallest.
// Each interruption loses t / 2 of training on average.
//
// An interruption here is a run that lost training it had not saved, not by a plan: a
// crash, a node failure, a hang ended without a save, a preemption or time limit whose
// save did not finish; one after which the supervisors wrote out snapshots newer than
// the last save is counted apart (covered). A deadline, kill-switch or preemption exit
// whose save finished lost nothing a shorter interval would have kept; a finished loop
// and the no-progress breaker are not interruptions either.
#pragma once

#include <string>

#include "report_model.hpp"

namespace trainctl {

struct checkpoint_advice {
  int saves = 0;          // finished saves measured (the exit saves too)
  double save_s = 0;      // their median: the cost of one save (wall seconds)
  int interruptions = 0;  // see above
  // Interruptions after which the supervisors wrote out snapshots newer than the last save:
  // what they lost is the snapshot interval's, which the save interval does not decide.
  int covered = 0;
  double training_s = 0;   // wall seconds from each run's first step to its last check(), all runs
  double between_s = 0;    // median training time between two saves in one run; 0: none seen
  double nodes = 1;        // mean nodes of a run, for node-hours
  double advised_s = 0;    // Daly's interval; 0: too little data
  std::string too_little;  // why there is no advice, and what more is needed; "" when advised
  double mtbi_s() const { return interruptions > 0 ? training_s / interruptions : 0; }
  // The expected share of training time lost to saves and rework at interval `t`.
  double waste(double t) const;
};

// Needs at least kMinInterruptions interruptions and one finished save.
constexpr int kMinInterruptions = 3;
checkpoint_advice advise_checkpoints(const run_report& r);

// The lines of the report's "checkpoints" part.
std::string checkpoint_advice_text(const checkpoint_advice& a);

}  // namespace trainctl
