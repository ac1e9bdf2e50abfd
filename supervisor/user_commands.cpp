// The commands people run against jobs and the bad-node memory, shared by trainctl-run's
// flags and the trainctl verbs. `who` starts every line the command prints (the
// program), `what` names the command in its errors ("--dump-stacks", "stacks").
#include "user_commands.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <sstream>
#include <string>
#include <vector>

#include "bad_nodes.hpp"
#include "gpu_memory.hpp"
#include "parse.hpp"
#include "slurm_job.hpp"
#include "stack_dump.hpp"
#include "subprocess.hpp"

namespace trainctl::commands {

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "";
}

}  // namespace

// --dump-stacks JOB: one task on each of the job's nodes (srun --overlap, beside the
// running steps) writes its ranks' stacks; the summary is made from what they print.
int dump_stacks_of_job(const std::string& who, const std::string& what, const std::string& job,
                       const std::string& log_dir) {
  using namespace trainctl;
  std::string error;
  const auto info = scontrol_show("job", job, std::chrono::milliseconds(10000), &error);
  const std::string job_line = info ? *info : "";
  if (!info || scontrol_field(job_line, "JobState") != "RUNNING") {
    const std::string why = info ? "the job is " + scontrol_field(job_line, "JobState") + ", not RUNNING"
                                 : "no such job that scontrol can show (" + error + ")";
    std::fprintf(stderr, "%s: %s %s: %s; accepted: the id of a running job\n", who.c_str(), what.c_str(), job.c_str(),
                 why.c_str());
    return 1;
  }
  // Given (--log-dir, TRAINCTL_LOG_DIR here): that. Else where the job's ranks put
  // theirs, which only the nodes can read, falling back to the job's working directory.
  std::string dir = log_dir.empty() ? env("TRAINCTL_LOG_DIR") : log_dir;
  dir = dir.empty() ? "fallback:" + scontrol_field(job_line, "WorkDir") + "/stacks-" + job : dir + "/stacks-" + job;
  // The part on each node is trainctl-run's (--dump-stacks-here): the one beside this
  // program (both are installed in the same bin directory).
  char self[4096] = {};
  std::string helper = "trainctl-run";
  if (readlink("/proc/self/exe", self, sizeof self - 1) > 0) {
    const std::string me = self;
    helper = me.substr(0, me.rfind('/') + 1) + "trainctl-run";
  }
  child_spec d;
  d.argv = {"srun",
            "--jobid=" + job,
            "--overlap",
            "--quiet",
            "-N",
            scontrol_field(job_line, "NumNodes"),
            "--ntasks-per-node=1",
            "-w",
            scontrol_field(job_line, "NodeList"),
            helper,
            "--dump-stacks-here",
            job,
            "--stacks-dir",
            dir};
  d.deadline = std::chrono::milliseconds(180000);
  d.merge_stderr = true;  // srun's own refusals ("Access/permission denied") are the answer then
  const auto t0 = std::chrono::steady_clock::now();
  const child_result r = run_child(d);
  std::vector<rank_stack> stacks;
  std::vector<std::string> errors, other;
  std::istringstream lines(r.output);
  for (std::string line; std::getline(lines, line);) {
    if (line.compare(0, 6, "error ") == 0) errors.push_back(line.substr(6));
    if (line.compare(0, 11, "stack rank=") != 0) {
      if (line.compare(0, 6, "error ") != 0 && !line.empty()) other.push_back(line);
      continue;
    }
    rank_stack s;
    s.rank = std::atoi(line.c_str() + 11);
    s.host = scontrol_field(line, "host");
    const size_t f = line.find(" frame=");
    s.frame = f == std::string::npos ? "" : line.substr(f + 7);
    s.file = scontrol_field(line.substr(0, f), "dir");  // where that node wrote
    stacks.push_back(s);
  }
  for (const auto& e : errors)
    std::fprintf(stderr, "%s: %s %s: %s\n", who.c_str(), what.c_str(), job.c_str(), e.c_str());
  if (!r.ok() && stacks.empty()) {
    // srun's own line says why (permission denied, no such job step...); else ours.
    const std::string why = !other.empty() ? other.front() : errors.empty() ? r.error : "";
    if (!why.empty()) std::fprintf(stderr, "%s: %s %s: %s\n", who.c_str(), what.c_str(), job.c_str(), why.c_str());
    return 1;
  }
  std::sort(stacks.begin(), stacks.end(), [](const rank_stack& a, const rank_stack& b) { return a.rank < b.rank; });
  const long long ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
  if (stacks.empty() && !errors.empty()) return 1;
  if (stacks.empty()) {
    std::fprintf(stderr, "%s: %s %s: no rank processes found on its nodes (%lld ms)\n", who.c_str(), what.c_str(),
                 job.c_str(), ms);
    return 1;
  }
  std::printf("%s: stacks of %zu ranks of job %s in %s/ (%lld ms): %s\n", who.c_str(), stacks.size(), job.c_str(),
              stacks[0].file.c_str(), ms, summarize(stacks).c_str());
  return errors.empty() ? 0 : 1;
}

// --bad-nodes: the hosts the next task should keep off, comma separated, on stdout;
// one line per host on stderr says why. The cap keeps enough of the partition for the
// job: its node count minus the job's, unless --bad-node-cap says less.
int print_bad_nodes(const std::string& who, const std::string& cap_option, const std::string& expiry_text,
                    const std::string& cap_text) {
  using namespace trainctl;
  std::chrono::milliseconds expiry{};
  long long cap = -1;
  const std::string expiry_option = cap_option == "--cap" ? "--expiry" : "--bad-node-expiry";
  try {
    expiry = parse_duration(expiry_text, 'h');
  } catch (const parse_error& e) {
    std::fprintf(stderr, "%s: %s: %s\n", who.c_str(), expiry_option.c_str(), e.what());
    return 2;
  }
  try {
    if (!cap_text.empty()) cap = parse_int(cap_text, 0, 100000);
  } catch (const parse_error& e) {
    std::fprintf(stderr, "%s: %s: %s\n", who.c_str(), cap_option.c_str(), e.what());
    return 2;
  }
  std::string why_cap = cap_option;
  if (cap < 0 && !env("SLURM_JOB_ID").empty()) {
    const std::chrono::milliseconds timeout(10000);
    const auto job = scontrol_show("job", env("SLURM_JOB_ID"), timeout, nullptr);
    const std::string partition = job ? scontrol_field(*job, "Partition") : "";
    const auto part = job ? scontrol_show("partition", partition, timeout, nullptr) : std::nullopt;
    if (part) {
      const long long total = std::atoll(scontrol_field(*part, "TotalNodes").c_str());
      const long long need = std::atoll(scontrol_field(*job, "NumNodes").c_str());
      cap = std::max(0LL, total - need);
      why_cap = "partition " + partition + " has " + std::to_string(total) + " nodes and the job needs " +
                std::to_string(need);
    }
  }
  if (cap < 0) {
    cap = 4;
    why_cap = "at most 4 outside a job";
  }
  const std::string path = bad_nodes_path();
  const auto all = read_bad_nodes(path);
  const std::int64_t now = static_cast<std::int64_t>(std::time(nullptr));
  const auto keep_off = nodes_to_exclude(all, now, std::chrono::duration_cast<std::chrono::seconds>(expiry),
                                         static_cast<std::size_t>(cap));
  const auto every = nodes_to_exclude(all, now, std::chrono::duration_cast<std::chrono::seconds>(expiry), 1 << 20);
  std::string list;
  for (const auto& host : keep_off) {
    list += (list.empty() ? "" : ",") + host;
    for (auto it = all.rbegin(); it != all.rend(); ++it)
      if (it->host == host) {
        std::fprintf(stderr, "%s: keeping off %s: %s, %llds ago (job %s)\n", who.c_str(), host.c_str(),
                     it->reason.c_str(), static_cast<long long>(now - it->when), it->job.c_str());
        break;
      }
  }
  if (every.size() > keep_off.size())
    std::fprintf(stderr, "%s: %zu more bad node%s not excluded (%s)\n", who.c_str(), every.size() - keep_off.size(),
                 every.size() - keep_off.size() == 1 ? "" : "s", why_cap.c_str());
  std::printf("%s\n", list.c_str());
  return 0;
}

// mark: a node into the bad-node memory, for a health check that failed (the template's
// HEALTH_CHECK, or a user's own prolog script); this node when `host` is empty.
int mark_bad_node(const std::string& who, const std::string& what, const std::string& host, const std::string& reason) {
  using namespace trainctl;
  if (reason.find('\n') != std::string::npos || reason.empty()) {
    std::fprintf(stderr, "%s: %s: the reason is %s; accepted: one line of text\n", who.c_str(), what.c_str(),
                 reason.empty() ? "empty" : "more than one line");
    return 2;
  }
  bad_node b;
  b.when = static_cast<std::int64_t>(std::time(nullptr));
  b.host = host.empty() ? node_name() : host;
  b.job = env("SLURM_JOB_ID").empty() ? "-" : env("SLURM_JOB_ID");
  // The GPUs are this node's: said only when it is this node that is marked.
  if (b.host == node_name()) b.gpus = gpu_uuids();
  b.reason = reason;
  const std::string path = bad_nodes_path(), why = record_bad_node(path, b);
  if (!why.empty()) {
    std::fprintf(stderr, "%s: %s: %s\n", who.c_str(), what.c_str(), why.c_str());
    return valid_node_name(b.host) ? 1 : 2;
  }
  std::fprintf(stderr, "%s: remembered %s as a bad node (%s) in %s\n", who.c_str(), b.host.c_str(), reason.c_str(),
               path.c_str());
  return 0;
}

// forget: every finding about `host` out of the bad-node memory (a node repaired).
int forget_bad_node(const std::string& who, const std::string& host) {
  using namespace trainctl;
  const std::string path = bad_nodes_path();
  std::size_t removed = 0;
  const std::string why = trainctl::forget_bad_node(path, host, &removed);
  if (!why.empty()) {
    std::fprintf(stderr, "%s: bad-nodes forget %s: %s\n", who.c_str(), host.c_str(), why.c_str());
    return valid_node_name(host) ? 1 : 2;
  }
  std::fprintf(stderr, "%s: %s: %zu finding%s forgotten (%s)\n", who.c_str(), host.c_str(), removed,
               removed == 1 ? "" : "s", path.c_str());
  return 0;
}

}  // namespace trainctl::commands
