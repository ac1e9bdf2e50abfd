#include "scontrol_text.hpp"

#include <cstdlib>
#include <cstring>
#include <ctime>
#include <sstream>

#include "parse.hpp"
#include "time_text.hpp"

namespace trainctl {

std::int64_t parse_slurm_duration(const std::string& text) {
  if (text == "UNLIMITED" || text == "Partition_Limit" || text == "INFINITE") return -1;
  std::int64_t days = 0;
  std::string rest = text;
  const size_t dash = text.find('-');
  if (dash != std::string::npos) {
    days = parse_int(text.substr(0, dash), 0, 100000);
    rest = text.substr(dash + 1);
  }
  std::int64_t parts[3] = {0, 0, 0};
  int n = 0;
  std::istringstream in(rest);
  std::string field;
  while (std::getline(in, field, ':')) {
    if (n == 3) throw parse_error("'" + text + "' is not a SLURM time");
    parts[n++] = parse_int(field, 0, 1000000);
  }
  if (n == 0) throw parse_error("'" + text + "' is not a SLURM time");
  std::int64_t h = 0, m = 0, s = 0;
  if (dash != std::string::npos) {  // d-h, d-h:m, d-h:m:s
    h = parts[0];
    m = n > 1 ? parts[1] : 0;
    s = n > 2 ? parts[2] : 0;
  } else if (n == 1) {  // minutes
    m = parts[0];
  } else if (n == 2) {  // m:s
    m = parts[0];
    s = parts[1];
  } else {  // h:m:s
    h = parts[0];
    m = parts[1];
    s = parts[2];
  }
  return ((days * 24 + h) * 60 + m) * 60 + s;
}

std::int64_t parse_slurm_timestamp(const std::string& text) {
  if (text.empty() || text == "Unknown" || text == "None" || text == "N/A") return 0;
  std::tm tm{};
  const char* end = strptime(text.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (end == nullptr || *end != '\0') throw parse_error("'" + text + "' is not a SLURM timestamp");
  tm.tm_isdst = -1;
  const std::time_t t = std::mktime(&tm);
  if (t == static_cast<std::time_t>(-1)) throw parse_error("'" + text + "' is not a SLURM timestamp");
  return static_cast<std::int64_t>(t) * 1000;
}

std::string format_slurm_timestamp(std::int64_t unix_ms) { return local_timestamp(unix_ms / 1000); }

std::optional<job_times> parse_scontrol_job(const std::string& line) {
  if (line.compare(0, 6, "JobId=") != 0) return std::nullopt;
  job_times jt;
  bool have_end = false;
  std::istringstream in(line);
  std::string word;
  try {
    while (in >> word) {
      const size_t eq = word.find('=');
      if (eq == std::string::npos) continue;
      const std::string key = word.substr(0, eq), value = word.substr(eq + 1);
      if (key == "EndTime") {
        jt.end_ms = parse_slurm_timestamp(value);
        have_end = true;
      } else if (key == "StartTime") {
        jt.start_ms = parse_slurm_timestamp(value);
      } else if (key == "SubmitTime") {
        jt.submit_ms = parse_slurm_timestamp(value);
      } else if (key == "TimeLimit") {
        jt.limit_s = parse_slurm_duration(value);
      } else if (key == "PreemptTime") {
        jt.preempting = parse_slurm_timestamp(value) != 0;
      } else if (key == "Requeue") {
        jt.requeue = value == "1";
      } else if (key == "JobState") {
        jt.state = value;
      }
    }
  } catch (const parse_error&) {
    return std::nullopt;
  }
  if (!have_end) return std::nullopt;
  return jt;
}

std::string scontrol_field(const std::string& line, const std::string& name) {
  const std::string key = " " + name + "=";
  size_t at = (" " + line).find(key);
  if (at == std::string::npos) return "";
  at += key.size() - 1;
  return line.substr(at, line.find_first_of(" \n", at) - at);
}

}  // namespace trainctl
