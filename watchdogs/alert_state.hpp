// The memory of alerts between runs, after Alertmanager: one entry per (check,
// target). A failure fires once (after `flap_guard` consecutive failures), repeats
// every `repeat` while it stays, and sends one RESOLVED when it clears. Kept in the
// state directory, which may sit on a shared filesystem: read-modify-write under an
// exclusive lock, written by atomic rename.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "check_result.hpp"
#include "owned_fd.hpp"

namespace trainctl {

struct alert_entry {
  int status = kOk;            // the last status seen
  std::int64_t since = 0;      // unix s: when the current status began
  std::int64_t last_sent = 0;  // unix s: when an alert for it was last sent; 0 never
  int failures = 0;            // consecutive non-OK runs
  bool firing = false;         // an alert went out and no RESOLVED yet
  int sent_status = -1;        // the status of the last FIRING or REPEAT sent; -1 none known
};

enum class alert_action { none, fire, repeat, resolve };
const char* action_name(alert_action a);

struct alert_policy {
  std::chrono::seconds repeat{4 * 3600};
  int flap_guard = 1;  // consecutive failures before the first alert
  bool alert_on_unknown = true;
};

// The pure decision, for one entry updated with one result at `now`.
alert_action decide_alert(alert_entry& e, int status, std::int64_t now, const alert_policy& p);

// A locked view of <state_dir>/alerts.json: the lock is held from construction to
// destruction; save() replaces the file atomically.
class alert_store {
 public:
  explicit alert_store(const std::string& state_dir);  // throws std::runtime_error
  ~alert_store();
  alert_store(const alert_store&) = delete;
  alert_store& operator=(const alert_store&) = delete;

  alert_entry& entry(const std::string& check, const std::string& target);
  void save();

 private:
  std::string dir_;
  owned_fd lock_fd_;  // held for the object's life: one trainwatch run at a time
  std::map<std::string, alert_entry> entries_;
};

// Makes the state directory (mode 0700) if it does not exist, and refuses one that
// belongs to another user or that others can write; throws with one line.
void ensure_state_dir(const std::string& dir);
// Why a directory is not safe to keep this user's files in ("" when it is): not this
// user's, or writable by group or others.
std::string untrusted_dir(const std::string& dir);
// Writes `text` to `path` atomically (a new temporary file beside it, O_EXCL and
// O_NOFOLLOW, then rename).
void write_atomically(const std::string& path, const std::string& text, unsigned mode = 0600);

}  // namespace trainctl
