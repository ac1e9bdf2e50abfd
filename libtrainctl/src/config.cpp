#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include <unistd.h>

#include "config_impl.hpp"
#include "env.hpp"
#include "log_line.hpp"
#include "rank_variable.hpp"

namespace trainctl {
namespace {

struct env_key {
  const char* env;
  const char* key;
  const char* fallback;  // what a malformed value falls back to, for the warning
};

// Order matters only for the order of warnings.
constexpr env_key kEnvKeys[] = {
    {"KILL_SWITCH", "kill_switch", "no kill switch"},
    {"SAVE_SWITCH", "save_switch", "no save switch"},
    {"TRAINCTL_EXIT_SWITCHES", "exit_switches", "no user exit switches"},
    {"TRAINCTL_SAVE_SWITCHES", "save_switches", "no user save switches"},
    {"TRAINCTL_DEADLINE", "deadline", "no deadline"},
    {"TRAINCTL_MEMORY_MIN_FREE", "memory_min_free", "no memory check"},
    {"TRAINCTL_MEMORY_THRESHOLD", "memory_threshold", "no memory check"},  // deprecated: % used
    {"TRAINCTL_GPU_MIN_FREE", "gpu_min_free", "no GPU memory check"},
    {"TRAINCTL_POLL_INTERVAL", "poll_interval", "the default"},
    {"TRAINCTL_SIGNALS", "signals", "the default"},
    {"TRAINCTL_CHECK_EVERY", "check_every", "10"},
    {"TRAINCTL_STATE", "state_path", "the default per job step"},
    {"TRAINCTL_STRAGGLER_FACTOR", "straggler_factor", "the default"},
    {"TRAINCTL_STRAGGLER_AGREEMENTS", "straggler_agreements", "the default"},
    {"TRAINCTL_LOG_DIR", "log_dir", "the default"},
};

// 0 (off), or a factor from 1.05 to 100.
double parse_factor(std::string_view text) {
  const std::string t(text);
  char* end = nullptr;
  const double f = std::strtod(t.c_str(), &end);
  if (t.empty() || end == nullptr || *end != '\0' || !(f == 0 || (f >= 1.05 && f <= 100)))
    throw parse_error("'" + t + "'; accepted: a factor from 1.05 to 100, e.g. 1.5, or 0 for off");
  return f;
}

std::string join_signals(const std::vector<int>& sigs) {
  std::string out;
  for (int s : sigs) out += (out.empty() ? "" : ",") + signal_name(s);
  return out.empty() ? "none" : out;
}

std::string join_paths(const std::vector<named_path>& v) {
  std::string out;
  for (const auto& np : v) out += (out.empty() ? "" : ",") + np.name + "=" + np.path;
  return out;
}

std::string absolute(std::string_view path) {
  if (path.empty()) throw parse_error("empty path; accepted: a file path");
  if (path.front() == '/') return std::string(path);
  char* cwd = getcwd(nullptr, 0);
  std::string out = cwd != nullptr ? std::string(cwd) + "/" + std::string(path) : std::string(path);
  std::free(cwd);
  return out;
}

}  // namespace

void config::impl::set(std::string_view key, std::string_view value) {
  if (key == "kill_switch")
    kill_switch = value.empty() ? "" : absolute(value);
  else if (key == "save_switch")
    save_switch = value.empty() ? "" : absolute(value);
  else if (key == "exit_switches" || key == "save_switches") {
    auto list = parse_named_paths(value);
    for (auto& np : list) np.path = absolute(np.path);
    (key == "exit_switches" ? exit_switches : save_switches) = std::move(list);
  } else if (key == "deadline") {
    deadline = value.empty() || value == "0" ? 0 : parse_unix_time(value);
  } else if (key == "memory_min_free") {
    memory = value.empty() || value == "none" ? threshold{} : parse_threshold(value);
  } else if (key == "memory_threshold") {
    // The older name, whose percentage meant "in use" while every other threshold's
    // means "left": 95% here is memory_min_free=5%. A size meant "left" in both.
    memory = value.empty() || value == "none" ? threshold{} : parse_threshold(value);
    if (memory.type == threshold::kind::percent) memory.percent = 100 - memory.percent;
  } else if (key == "gpu_min_free") {
    gpu = value.empty() || value == "none" ? threshold{} : parse_threshold(value);
  } else if (key == "poll_interval") {
    poll_interval = option::parse_poll_interval(value);
  } else if (key == "signals") {
    signals = option::parse_notice_signal_list(value);
  } else if (key == "check_every") {
    check_every = static_cast<int>(parse_int(value, 1, 1000000));
  } else if (key == "state_path") {
    state_path = value.empty() ? "" : absolute(value);
  } else if (key == "rank") {
    rank = static_cast<int>(parse_int(value, 0, 1 << 30));
  } else if (key == "world_size") {
    world_size = static_cast<int>(parse_int(value, 0, 1 << 20));
  } else if (key == "straggler_factor") {
    straggler_factor = parse_factor(value);
  } else if (key == "straggler_agreements") {
    straggler_agreements = static_cast<int>(parse_int(value, 1, 1000000));
  } else if (key == "log_dir") {
    log_dir = value.empty() ? "" : absolute(value);
  } else {
    throw std::invalid_argument("trainctl: unknown setting '" + std::string(key) +
                                "'; accepted: kill_switch, save_switch, exit_switches, save_switches, deadline, "
                                "memory_min_free, gpu_min_free, poll_interval, signals, check_every, state_path, rank, "
                                "world_size, straggler_factor, straggler_agreements, log_dir");
  }
}

std::string config::impl::get(std::string_view key) const {
  if (key == "kill_switch") return kill_switch;
  if (key == "save_switch") return save_switch;
  if (key == "exit_switches") return join_paths(exit_switches);
  if (key == "save_switches") return join_paths(save_switches);
  if (key == "deadline") return deadline > 0 ? std::to_string(deadline) : "";
  if (key == "memory_min_free") return memory.str();
  if (key == "memory_threshold") {
    threshold used = memory;
    if (used.type == threshold::kind::percent) used.percent = 100 - used.percent;
    return used.str();
  }
  if (key == "gpu_min_free") return gpu.str();
  if (key == "poll_interval") return format_duration(poll_interval);
  if (key == "signals") return join_signals(signals);
  if (key == "check_every") return std::to_string(check_every);
  if (key == "state_path") return state_path;
  if (key == "rank") return std::to_string(rank);
  if (key == "world_size") return std::to_string(world_size);
  if (key == "straggler_factor") {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", straggler_factor);
    return buf;
  }
  if (key == "straggler_agreements") return std::to_string(straggler_agreements);
  if (key == "log_dir") return log_dir;
  throw std::invalid_argument("trainctl: unknown setting '" + std::string(key) + "'");
}

config::config() : impl_(std::make_shared<impl>()) {}

config config::from_env() {
  config c;
  impl& m = *c.impl_;
  for (const auto& e : kEnvKeys) {
    const std::string v = env_text(e.env);
    if (v.empty()) continue;
    try {
      m.set(e.key, v);
    } catch (const std::exception& ex) {
      std::string fallback = e.fallback;
      if (fallback == "the default") fallback = config().get(e.key);  // from options.hpp, not written here
      m.warnings.push_back(std::string("trainctl: ") + e.env + ": " + ex.what() + "; using " + fallback);
      continue;
    }
    if (std::string(e.key) == "memory_threshold")
      m.warnings.push_back(std::string("trainctl: TRAINCTL_MEMORY_THRESHOLD is deprecated (its % meant in use, every "
                                       "other threshold's means left); using it as TRAINCTL_MEMORY_MIN_FREE=") +
                           m.get("memory_min_free"));
  }
  if (const rank_variable r = rank_variable_of(env_text); r.name != nullptr) {
    try {
      m.set("rank", r.text);
    } catch (const std::exception& ex) {
      m.warnings.push_back(std::string("trainctl: ") + r.name + ": " + ex.what() + "; using rank 0");
    }
  }
  for (const auto& w : m.warnings) log_line(kLogWarning, "%s\n", w.c_str());
  return c;
}

void config::set(std::string_view key, std::string_view value) {
  if (impl_.use_count() > 1) impl_ = std::make_shared<impl>(*impl_);  // copy on write
  try {
    impl_->set(key, value);
  } catch (const parse_error& e) {
    throw std::invalid_argument("trainctl: " + std::string(key) + ": " + e.what());
  }
}

std::string config::get(std::string_view key) const { return impl_->get(key); }

const std::vector<std::string>& config::warnings() const { return impl_->warnings; }

}  // namespace trainctl
