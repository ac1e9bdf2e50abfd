// The user's verbs, one implementation each (cli/<verb>/), declared in one place as git's
// builtin.h does. Each prints what it found, every line starting with `who` (the
// program), and returns the exit status: 0, 1 (it could not), 2 (bad input).
#pragma once
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace trainctl::commands {

// Every rank's Python and native stacks of running job `job` into LOG_DIR/trainctl-USER/stacks-JOB/
// (one srun --overlap task on each of its nodes runs trainctl-run --dump-stacks-here),
// and one line saying where most ranks are and which are elsewhere.
int dump_stacks_of_job(const std::string& who, const std::string& what, const std::string& job,
                       const std::string& log_dir, bool json = false);
// The nodes the next task should keep off, comma separated, on stdout; why, on stderr.
// `cap_option` names the cap in the line saying some were left out. With `json`: one
// document on stdout instead (schema 1: exclude, and every remembered node with why).
int print_bad_nodes(const std::string& who, const std::string& cap_option, const std::string& expiry_text,
                    const std::string& cap_text, bool json = false);
// Remembers `host` (this node when empty) as bad, with a one-line reason.
int mark_bad_node(const std::string& who, const std::string& what, const std::string& host, const std::string& reason);
// One row per rank of running job `job` (one srun --overlap task per node reads the
// node state there), as a table or JSON; with `watch`, again every `every` until the
// job ends or Ctrl-C.
int show_job_status(const std::string& who, const std::string& job, bool json, bool watch,
                    std::chrono::milliseconds every);
// No JOB: one line per running job of the caller that trainctl supervises (id, name,
// nodes, ranks, deadline, findings), then the ids of the others; or JSON (schema 1).
int list_job_status(const std::string& who, bool json);
// Where the node-hours of job (or job array) `job` went: each task's queue, start-up,
// training, saves, lost work and end, the goodput, and the timeline as SVG at
// `svg_path` (none when empty). From sacct, else scontrol, and the run events.
// `format`: "text", "json", "openmetrics" or "prometheus" (report_metrics.hpp).
int show_run_report(const std::string& who, const std::string& job, const std::string& svg_path,
                    const std::string& format);
// What in batch script `path` would lose work, checked against the cluster and the
// script's earlier runs: one line per problem (or JSON); 0 none, 1 some, 2 it could not
// lint. `sbatch_args`: the options it would be submitted with.
int lint_batch_script(const std::string& who, const std::string& path, const std::vector<std::string>& sbatch_args,
                      std::int64_t collective_timeout_ms, bool json);
// Rehearses a long run's failures on batch script `path` (a two-task array on the
// cluster, faults injected) and prints what should have happened, what did, and advice;
// 0 ready, 1 something to fix, 2 it could not drill.
int drill_batch_script(const std::string& who, const std::string& path, const std::vector<std::string>& sbatch_args,
                       bool keep, bool json, std::chrono::milliseconds start_timeout);
// Forgets every finding about `host`.
int forget_bad_node(const std::string& who, const std::string& host);

}  // namespace trainctl::commands
