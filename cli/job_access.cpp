#include "job_access.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "parse.hpp"

namespace trainctl::commands {

std::optional<job_record> record_to_look_inside(const std::string& output, std::string* why) {
  std::vector<job_record> records, running;
  for (const auto& line : split(output, '\n')) {
    if (line.find("JobId=") == std::string::npos) continue;
    records.push_back(parse_job_record(std::string(line)));
    if (records.back().state == "RUNNING") running.push_back(records.back());
  }
  if (records.empty()) {
    if (why != nullptr) *why = "scontrol showed no job record";
    return std::nullopt;
  }
  if (running.size() > 1) {
    if (why != nullptr) {
      *why = std::to_string(running.size()) + " of its tasks run (jobs";
      for (const auto& r : running) *why += " " + r.id;
      *why += ")";
    }
    return std::nullopt;
  }
  return running.size() == 1 ? running.front() : records.front();
}

std::optional<job_record> running_job_of_mine(const std::string& who, const std::string& what, const std::string& job) {
  std::string error;
  std::optional<job_record> info;
  if (const auto output = scontrol_show("job", job, std::chrono::milliseconds(10000), &error)) {
    info = record_to_look_inside(*output, &error);
    if (!info) {
      std::fprintf(stderr, "%s: %s %s: %s; accepted: the id of one running task\n", who.c_str(), what.c_str(),
                   job.c_str(), error.c_str());
      return std::nullopt;
    }
  }
  if (!info || info->state != "RUNNING") {
    std::string why =
        info ? "the job is " + info->state + ", not RUNNING" : "no such job that scontrol can show (" + error + ")";
    // A kill switch holds an array's pending tasks: say how to go on.
    if (info && info->state == "PENDING" && info->reason.rfind("JobHeld", 0) == 0)
      why += " (held: " + info->reason + "; after a kill switch, remove it, then scontrol release " + job + ")";
    std::fprintf(stderr, "%s: %s %s: %s; accepted: the id of a running job\n", who.c_str(), what.c_str(), job.c_str(),
                 why.c_str());
    return std::nullopt;
  }
  // SLURM refuses a step in another user's job; said in words rather than as srun's
  // "Access/permission denied".
  if (info->uid >= 0 && getuid() != 0 && static_cast<uid_t>(info->uid) != getuid()) {
    std::fprintf(stderr, "%s: %s %s: the job is %s's; only its own user can look inside it\n", who.c_str(),
                 what.c_str(), job.c_str(), info->user.c_str());
    return std::nullopt;
  }
  return info;
}

std::vector<std::string> srun_helper_on_each_node(const job_record& job, const std::vector<std::string>& args) {
  char self[4096] = {};
  std::string helper = "trainctl-run";
  if (readlink("/proc/self/exe", self, sizeof self - 1) > 0) {
    const std::string me = self;
    helper = me.substr(0, me.rfind('/') + 1) + "trainctl-run";
  }
  std::vector<std::string> argv{"srun",        "--jobid=" + job.id,   "--overlap", "--quiet",     "-N",
                                job.num_nodes, "--ntasks-per-node=1", "-w",        job.node_list, helper};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

}  // namespace trainctl::commands
