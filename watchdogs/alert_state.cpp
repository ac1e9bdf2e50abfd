#include "alert_state.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

namespace trainctl {
namespace {

// An entry stored under a check's old name, under its current one: an alert open when
// the check was renamed stays open, and neither resolves nor fires again for the rename.
std::string current_key(const std::string& stored) {
  static const std::pair<const char*, const char*> kRenamed[] = {{"bad-nodes", "job-on-bad-node"}};
  for (const auto& [was, now] : kRenamed) {
    const std::string prefix = std::string(was) + "\x1f";
    if (stored.compare(0, prefix.size(), prefix) == 0) return now + stored.substr(prefix.size() - 1);
  }
  return stored;
}

}  // namespace

const char* action_name(alert_action a) {
  switch (a) {
    case alert_action::fire:
      return "fire";
    case alert_action::repeat:
      return "repeat";
    case alert_action::resolve:
      return "resolve";
    case alert_action::none:
      break;
  }
  return "none";
}

alert_action decide_alert(alert_entry& e, int status, std::int64_t now, const alert_policy& p) {
  const bool failing = status != kOk && (status != kUnknown || p.alert_on_unknown);
  if (status != e.status || e.since == 0) e.since = now;
  e.status = status;
  if (!failing) {
    e.failures = 0;
    if (e.firing) {
      e.firing = false;
      e.last_sent = now;
      return alert_action::resolve;
    }
    return alert_action::none;
  }
  ++e.failures;
  if (!e.firing) {
    if (e.failures < p.flap_guard) return alert_action::none;
    e.firing = true;
    e.last_sent = now;
    e.sent_status = status;
    return alert_action::fire;
  }
  if (now - e.last_sent >= p.repeat.count()) {
    e.last_sent = now;
    e.sent_status = status;
    return alert_action::repeat;
  }
  return alert_action::none;
}

std::string untrusted_dir(const std::string& dir) {
  struct stat st {};
  if (stat(dir.c_str(), &st) != 0) return std::string("cannot be read: ") + std::strerror(errno);
  if (!S_ISDIR(st.st_mode)) return "is not a directory";
  if (st.st_uid != getuid()) return "belongs to uid " + std::to_string(st.st_uid) + ", not to you";
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return std::string("can be written by group or others (mode ") + mode + ")";
  }
  return "";
}

void ensure_state_dir(const std::string& dir) {
  if (dir.empty()) throw std::runtime_error("no state directory given");
  std::string partial = dir[0] == '/' ? "" : ".";
  std::istringstream in(dir);
  std::string piece;
  while (std::getline(in, piece, '/')) {
    if (piece.empty()) continue;
    partial += "/" + piece;
    if (mkdir(partial.c_str(), 0700) != 0 && errno != EEXIST)
      throw std::runtime_error("cannot create state directory " + partial + ": " + std::strerror(errno));
  }
  // Another user's directory, or one others can write, could hold a planted spool item
  // (with her own sink), alerts.json (suppressing an alert) or symlinks: refused.
  const std::string why = untrusted_dir(dir);
  if (!why.empty()) throw std::runtime_error("state directory " + dir + " " + why + ": refusing it");
}

void write_atomically(const std::string& path, const std::string& text, unsigned mode) {
  // The host and pid in the name keep two nodes that share the directory apart. A name
  // left by a run that died is removed first (a symlink, not what it points to), and
  // the file is made new: never opened through a link.
  const std::string tmp = path + ".tmp." + host_name() + "." + std::to_string(getpid());
  unlink(tmp.c_str());
  owned_fd fd(open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode));
  if (!fd) throw std::runtime_error("cannot write " + tmp + ": " + std::strerror(errno));
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = write(fd.get(), text.data() + done, text.size() - done);
    if (n <= 0) {
      const int e = errno;
      fd.reset();
      unlink(tmp.c_str());
      throw std::runtime_error("cannot write " + tmp + ": " + std::strerror(e));
    }
    done += static_cast<size_t>(n);
  }
  // close()'s own error counts (NFS reports a failed write there).
  if (fsync(fd.get()) != 0 || close(fd.release()) != 0 || rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    unlink(tmp.c_str());
    throw std::runtime_error("cannot replace " + path + ": " + std::strerror(e));
  }
}

alert_store::alert_store(const std::string& state_dir) : dir_(state_dir) {
  ensure_state_dir(dir_);
  const std::string lock = dir_ + "/alerts.lock";
  lock_fd_.reset(open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!lock_fd_) throw std::runtime_error("cannot open " + lock + ": " + std::strerror(errno));
  // flock works across NFS clients on Linux (it is mapped to POSIX locks there).
  while (flock(lock_fd_.get(), LOCK_EX) != 0) {
    if (errno != EINTR) throw std::runtime_error("cannot lock " + lock + ": " + std::strerror(errno));
  }
  std::ifstream in(dir_ + "/alerts.json");
  if (!in) return;
  try {
    const auto j = nlohmann::json::parse(in);
    for (const auto& [stored, v] : j.items()) {
      const std::string key = current_key(stored);
      if (key != stored && j.contains(key)) continue;  // the new name's own entry wins
      alert_entry e;
      e.status = v.value("status", 0);
      e.since = v.value("since", std::int64_t{0});
      e.last_sent = v.value("last_sent", std::int64_t{0});
      e.failures = v.value("failures", 0);
      e.firing = v.value("firing", false);
      e.sent_status = v.value("sent_status", -1);
      entries_[key] = e;
    }
  } catch (const std::exception& e) {
    // A damaged file is not a reason to stop alerting: start afresh, say so.
    std::fprintf(stderr, "trainwatch: %s/alerts.json is damaged (%s); starting with no alert history\n", dir_.c_str(),
                 e.what());
  }
}

alert_store::~alert_store() = default;

alert_entry& alert_store::entry(const std::string& check, const std::string& target) {
  return entries_[json_safe(check + "\x1f" + target)];
}

void alert_store::save() {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [key, e] : entries_)
    j[key] = {{"status", e.status},     {"since", e.since},   {"last_sent", e.last_sent},
              {"failures", e.failures}, {"firing", e.firing}, {"sent_status", e.sent_status}};
  write_atomically(dir_ + "/alerts.json", j.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
}

}  // namespace trainctl
