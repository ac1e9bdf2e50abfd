// The SLURM release of this node, asked at run time (`scontrol --version`) and not taken
// from the headers trainctl was built against: the wheel's tools are built against Debian
// 11's SLURM 20.11 and run on every release, and what a release does by itself (requeue a
// preempted job) decides what trainctl-run --batch must do.
#pragma once

#include <chrono>
#include <optional>
#include <string>

namespace trainctl {

struct slurm_release {
  int major = 0, minor = 0, micro = 0;
  std::string source;  // "scontrol --version", or why the headers' release stands in
  long number() const { return (static_cast<long>(major) << 16) + (minor << 8) + micro; }  // as SLURM_VERSION_NUM
  std::string text() const;                                                                // "24.11.5"
};

// The release in what `scontrol --version` printed ("slurm 24.11.5", Debian's "slurm-wlm
// 22.05.8"); nullopt when it names none.
std::optional<slurm_release> parse_slurm_release(const std::string& output);

// This node's release from `scontrol --version` (bounded by `timeout`); without an
// answer, the release of the headers built against, and `source` says why.
slurm_release slurm_release_here(std::chrono::milliseconds timeout);

// Whether the controller puts back in the queue, by itself, a job whose batch script ends
// while it is being preempted with PreemptMode=REQUEUE (the ranks saved and exited within
// the grace time): SLURM does from 24.05 ("assume that job signalled for GraceTime was
// preempted"); before, such a job ends COMPLETED unless someone requeues it. A second,
// explicit requeue on 24.05 to 25.05 stays pending and requeues the resumed run again
// when it ends: the job never completes.
bool requeues_preempted_jobs(const slurm_release& r);

}  // namespace trainctl
