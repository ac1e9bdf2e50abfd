#include "job_history.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <sstream>

#include "parse.hpp"
#include "slurm_job.hpp"
#include "subprocess.hpp"

namespace trainctl {
namespace {

std::int64_t timestamp_or_zero(const std::string& text) {
  try {
    return parse_slurm_timestamp(text);
  } catch (const parse_error&) {
    return 0;
  }
}

std::vector<std::string> split(const std::string& line, char sep) {
  std::vector<std::string> out;
  std::string part;
  std::istringstream in(line);
  while (std::getline(in, part, sep)) out.push_back(part);
  if (!line.empty() && line.back() == sep) out.emplace_back();
  return out;
}

}  // namespace

std::vector<task_record> parse_sacct_tasks(const std::string& output) {
  std::vector<task_record> out;
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);) {
    const auto f = split(line, '|');
    if (f.size() < 9 || !all_digits(f[0], 20)) continue;
    task_record t;
    t.job_id = f[0];
    t.name = f[1];
    t.state = f[2].substr(0, f[2].find(' '));  // "CANCELLED by 1000"
    t.user = f[3];
    t.submit_ms = timestamp_or_zero(f[4]);
    t.eligible_ms = timestamp_or_zero(f[5]);
    t.start_ms = timestamp_or_zero(f[6]);
    t.end_ms = timestamp_or_zero(f[7]);
    t.nodes = std::atoi(f[8].c_str());
    out.push_back(std::move(t));
  }
  return out;
}

std::vector<task_record> parse_scontrol_tasks(const std::string& output) {
  std::vector<task_record> out;
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);) {
    if (line.compare(0, 6, "JobId=") != 0) continue;
    task_record t;
    t.job_id = scontrol_field(line, "JobId");
    const std::string array = scontrol_field(line, "ArrayJobId"), index = scontrol_field(line, "ArrayTaskId");
    t.name = array.empty() ? t.job_id : array + "_" + index;
    t.state = scontrol_field(line, "JobState");
    const std::string user = scontrol_field(line, "UserId");
    t.user = user.substr(0, user.find('('));
    t.submit_ms = timestamp_or_zero(scontrol_field(line, "SubmitTime"));
    t.eligible_ms = timestamp_or_zero(scontrol_field(line, "EligibleTime"));
    if (t.state != "PENDING") {  // a pending job's StartTime is the scheduler's guess
      t.start_ms = timestamp_or_zero(scontrol_field(line, "StartTime"));
      t.end_ms = timestamp_or_zero(scontrol_field(line, "EndTime"));
    }
    t.nodes = std::atoi(scontrol_field(line, "NumNodes").c_str());
    if (all_digits(t.job_id, 20)) out.push_back(std::move(t));
  }
  return out;
}

std::size_t merge_live_tasks(std::vector<task_record>& recorded, const std::vector<task_record>& live) {
  std::size_t supplied = 0;
  for (const task_record& l : live) {
    auto same = std::find_if(recorded.begin(), recorded.end(), [&](const task_record& r) {
      return r.job_id == l.job_id && (l.start_ms == 0 || std::llabs(r.start_ms - l.start_ms) <= 1000);
    });
    if (same == recorded.end()) {
      if (l.start_ms == 0 &&
          std::any_of(recorded.begin(), recorded.end(), [&](const task_record& r) { return r.job_id == l.job_id; }))
        continue;  // pending now, with earlier runs recorded
      recorded.push_back(l);
      ++supplied;
    } else if (same->end_ms == 0 && l.end_ms != 0 && l.state != "RUNNING" && l.state != "COMPLETING") {
      same->end_ms = l.end_ms;
      same->state = l.state;
      ++supplied;
    }
  }
  return supplied;
}

// The tasks from sacct where accounting runs, else from slurmctld's memory. *source
// names where they came from; *why says why neither answered.
std::vector<task_record> job_tasks(const std::string& job, std::string* source, std::string* why) {
  child_spec sacct;
  sacct.argv = {"sacct", "-X",        "-D",
                "-n",    "-P",        "-j",
                job,     "-o",        "JobIDRaw,JobID,State,User,Submit,Eligible,Start,End,NNodes",
                "-S",    "1970-01-01"};
  sacct.deadline = std::chrono::milliseconds(30000);
  sacct.merge_stderr = true;
  const child_result r = run_child(sacct);
  std::vector<task_record> tasks = r.ok() ? parse_sacct_tasks(r.output) : std::vector<task_record>{};
  std::string sacct_said = r.ok() ? "no record of it" : r.output.substr(0, r.output.find('\n'));
  if (sacct_said.empty()) sacct_said = r.error;
  // slurmctld's view as well: the freshest for the tasks that just ran, the only one
  // where no accounting runs; it forgets ended tasks after MinJobAge.
  std::string error;
  const auto lines = scontrol_show("job", job, std::chrono::milliseconds(15000), &error);
  std::vector<task_record> live = lines ? parse_scontrol_tasks(*lines) : std::vector<task_record>{};
  if (!tasks.empty()) {
    const std::size_t supplied = merge_live_tasks(tasks, live);
    *source = "sacct";
    if (supplied > 0)
      *source += " (and slurmctld for " + std::to_string(supplied) + " run" + (supplied == 1 ? "" : "s") +
                 " slurmdbd had not recorded yet)";
    return tasks;
  }
  if (!live.empty()) {
    *source =
        "scontrol (no accounting: sacct said \"" + sacct_said + "\"; slurmctld forgets ended tasks after MinJobAge)";
    return live;
  }
  *why = "sacct: " + sacct_said + "; scontrol: " + (lines ? "no record of it" : error);
  return {};
}

std::vector<task_record> tasks_named(const std::string& user, const std::string& name, int days, std::string* why) {
  child_spec sacct;
  sacct.argv = {"sacct",
                "-X",
                "-n",
                "-P",
                "-u",
                user,
                "--name=" + name,
                "-o",
                "JobIDRaw,JobID,State,User,Submit,Eligible,Start,End,NNodes",
                "-S",
                "now-" + std::to_string(days) + "days"};
  sacct.deadline = std::chrono::milliseconds(30000);
  sacct.merge_stderr = true;
  const child_result r = run_child(sacct);
  if (!r.ok()) {
    const std::string said = r.output.substr(0, r.output.find('\n'));
    *why = "sacct: " + (said.empty() ? r.error : said);
    return {};
  }
  std::vector<task_record> tasks = parse_sacct_tasks(r.output);
  if (tasks.empty())
    *why = "sacct knows no job of " + user + " named " + name + " in the last " + std::to_string(days) + " days";
  return tasks;
}

}  // namespace trainctl
