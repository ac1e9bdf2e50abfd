// The C ABI over trainctl::controller. No exception crosses extern "C": every entry
// point catches and turns it into a code plus a thread-local message.
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>
#include <system_error>

#include "log_line.hpp"
#include "trainctl/controller.hpp"
#include "trainctl/trainctl.h"

struct trainctl_config {
  trainctl::config cfg;
};

struct trainctl_ctl {
  trainctl::controller ctl;
  trainctl::decision last;
  explicit trainctl_ctl(const trainctl::config& c) : ctl(c) {}
};

namespace {

thread_local std::string t_last_error;

int fail(int code, const std::string& message) {
  t_last_error = message;
  return code;
}

// Runs f, mapping exceptions to codes. f returns the success value.
template <typename F>
int guarded(F&& f) noexcept {
  try {
    return f();
  } catch (const std::invalid_argument& e) {
    return fail(TRAINCTL_EINVAL, e.what());
  } catch (const std::system_error& e) {
    return fail(TRAINCTL_ESYSTEM, e.what());
  } catch (const std::bad_alloc&) {
    return fail(TRAINCTL_ENOMEM, "trainctl: out of memory");
  } catch (const std::exception& e) {
    return fail(TRAINCTL_EINTERNAL, e.what());
  } catch (...) {
    return fail(TRAINCTL_EINTERNAL, "trainctl: unknown error");
  }
}

// Copies `text` into the caller's buf (always NUL-terminated, cut to len - 1) and
// returns its full length, as the C ABI's string getters promise.
int copy_out(const std::string& text, char* buf, size_t len) {
  if (buf != nullptr && len > 0) {
    const size_t n = std::min(len - 1, text.size());
    std::memcpy(buf, text.data(), n);
    buf[n] = '\0';
  }
  return static_cast<int>(text.size());
}

int bits_of(const trainctl::decision& d) {
  return (d.exit ? TRAINCTL_EXIT : 0) | (d.save ? TRAINCTL_SAVE : 0) | (d.exit && d.saved ? TRAINCTL_SAVED : 0);
}

struct reduce_failed {};

}  // namespace

static_assert(TRAINCTL_VOTE_LEN == trainctl::kVoteLen, "the C and C++ vote lengths must agree");

extern "C" {

int trainctl_version(void) { return TRAINCTL_VERSION_NUMBER; }

int trainctl_resume_path(const char* dir, char* buf, size_t len) {
  if (dir == nullptr || *dir == '\0')
    return fail(TRAINCTL_EINVAL,
                "trainctl: resume_path: no directory given; accepted: the directory the checkpoints are saved in");
  return guarded([&] { return copy_out(trainctl::controller::resume_path(dir), buf, len); });
}

int trainctl_run_id(char* buf, size_t len) {
  return guarded([&] { return copy_out(trainctl::controller::run_id(), buf, len); });
}

int trainctl_set_log_fn(trainctl_log_fn fn, void* user) {
  try {
    trainctl::set_log_sink(fn, user);
    return TRAINCTL_OK;
  } catch (const std::bad_alloc&) {
    return fail(TRAINCTL_ENOMEM, "trainctl: out of memory");
  }
}

const char* trainctl_strerror(int code) {
  switch (code) {
    case TRAINCTL_OK:
      return "success";
    case TRAINCTL_EINVAL:
      return "invalid argument or setting";
    case TRAINCTL_ESYSTEM:
      return "a system call failed";
    case TRAINCTL_ENOMEM:
      return "out of memory";
    case TRAINCTL_EREDUCE:
      return "the reduce callback failed";
    case TRAINCTL_EINTERNAL:
      return "internal error";
    default:
      return "unknown error code";
  }
}

const char* trainctl_last_error(void) { return t_last_error.c_str(); }

int trainctl_config_create(trainctl_config** out) {
  if (out == nullptr) return fail(TRAINCTL_EINVAL, "trainctl_config_create: out is NULL");
  *out = nullptr;
  return guarded([&] {
    *out = new trainctl_config{trainctl::config::from_env()};
    return TRAINCTL_OK;
  });
}

void trainctl_config_destroy(trainctl_config* cfg) { delete cfg; }

int trainctl_config_set(trainctl_config* cfg, const char* key, const char* value) {
  if (cfg == nullptr || key == nullptr || value == nullptr)
    return fail(TRAINCTL_EINVAL, "trainctl_config_set: cfg, key and value must not be NULL");
  return guarded([&] {
    cfg->cfg.set(key, value);
    return TRAINCTL_OK;
  });
}

int trainctl_config_get(const trainctl_config* cfg, const char* key, char* buf, size_t len) {
  if (cfg == nullptr || key == nullptr)
    return fail(TRAINCTL_EINVAL, "trainctl_config_get: cfg and key must not be NULL");
  return guarded([&] { return copy_out(cfg->cfg.get(key), buf, len); });
}

int trainctl_create(const trainctl_config* cfg, trainctl_ctl** out) {
  if (out == nullptr) return fail(TRAINCTL_EINVAL, "trainctl_create: out is NULL");
  *out = nullptr;
  return guarded([&] {
    *out = cfg != nullptr ? new trainctl_ctl(cfg->cfg) : new trainctl_ctl(trainctl::config::from_env());
    return TRAINCTL_OK;
  });
}

void trainctl_destroy(trainctl_ctl* ctl) { delete ctl; }

int trainctl_should_exit(const trainctl_ctl* ctl) {
  if (ctl == nullptr) return fail(TRAINCTL_EINVAL, "trainctl_should_exit: ctl is NULL");
  return ctl->ctl.should_exit() ? 1 : 0;
}

int trainctl_should_save(trainctl_ctl* ctl) {
  if (ctl == nullptr) return fail(TRAINCTL_EINVAL, "trainctl_should_save: ctl is NULL");
  return guarded([&] { return ctl->ctl.should_save() ? 1 : 0; });
}

int trainctl_check(trainctl_ctl* ctl, int64_t step, trainctl_reduce_fn reduce, void* user) {
  if (ctl == nullptr) return fail(TRAINCTL_EINVAL, "trainctl_check: ctl is NULL");
  return guarded([&] {
    try {
      trainctl::controller::reducer r;
      if (reduce != nullptr)
        r = [&](int64_t* v, size_t n) {
          if (reduce(v, n, user) != 0) throw reduce_failed{};
        };
      ctl->last = ctl->ctl.check(step, r);
    } catch (const reduce_failed&) {
      return fail(TRAINCTL_EREDUCE, "trainctl_check: the reduce callback failed; no decision was taken");
    }
    return bits_of(ctl->last);
  });
}

int trainctl_vote(trainctl_ctl* ctl, int64_t step, int64_t* vote, size_t len) {
  if (ctl == nullptr || vote == nullptr) return fail(TRAINCTL_EINVAL, "trainctl_vote: ctl and vote must not be NULL");
  return guarded([&] { return ctl->ctl.vote(step, vote, len) ? 1 : 0; });
}

int trainctl_decide(trainctl_ctl* ctl, int64_t step, const int64_t* reduced, size_t len) {
  if (ctl == nullptr || reduced == nullptr)
    return fail(TRAINCTL_EINVAL, "trainctl_decide: ctl and reduced must not be NULL");
  return guarded([&] {
    ctl->last = ctl->ctl.decide(step, reduced, len);
    return bits_of(ctl->last);
  });
}

const char* trainctl_exit_reason(const trainctl_ctl* ctl) { return ctl != nullptr ? ctl->last.reason.c_str() : ""; }
const char* trainctl_save_reason(const trainctl_ctl* ctl) {
  return ctl != nullptr ? ctl->last.save_reason.c_str() : "";
}

int trainctl_set_deadline(trainctl_ctl* ctl, double unix_seconds) {
  if (ctl == nullptr) return fail(TRAINCTL_EINVAL, "trainctl_set_deadline: ctl is NULL");
  return guarded([&] {
    ctl->ctl.set_deadline(unix_seconds);
    return TRAINCTL_OK;
  });
}

int trainctl_add_switch(trainctl_ctl* ctl, int kind, const char* name, const char* path) {
  if (ctl == nullptr || name == nullptr || path == nullptr)
    return fail(TRAINCTL_EINVAL, "trainctl_add_switch: ctl, name and path must not be NULL");
  if (kind != TRAINCTL_SWITCH_EXIT && kind != TRAINCTL_SWITCH_SAVE)
    return fail(TRAINCTL_EINVAL, "trainctl_add_switch: kind must be TRAINCTL_SWITCH_EXIT or TRAINCTL_SWITCH_SAVE");
  return guarded([&] {
    ctl->ctl.add_switch(kind == TRAINCTL_SWITCH_EXIT, name, path);
    return TRAINCTL_OK;
  });
}

int trainctl_set_rank(trainctl_ctl* ctl, int rank) {
  if (ctl == nullptr) return fail(TRAINCTL_EINVAL, "trainctl_set_rank: ctl is NULL");
  return guarded([&] {
    ctl->ctl.set_rank(rank);
    return TRAINCTL_OK;
  });
}

int trainctl_compute_begin(trainctl_ctl* ctl) {
  if (ctl == nullptr) return fail(TRAINCTL_EINVAL, "trainctl_compute_begin: ctl is NULL");
  ctl->ctl.compute_begin();
  return 0;
}

int trainctl_compute_end(trainctl_ctl* ctl) {
  if (ctl == nullptr) return fail(TRAINCTL_EINVAL, "trainctl_compute_end: ctl is NULL");
  ctl->ctl.compute_end();
  return 0;
}

int trainctl_phase_begin(trainctl_ctl* ctl, const char* name) {
  if (ctl == nullptr || name == nullptr)
    return fail(TRAINCTL_EINVAL, "trainctl_phase_begin: ctl and name must not be NULL");
  return guarded([&] {
    ctl->ctl.phase_begin(name);
    return TRAINCTL_OK;
  });
}

int trainctl_phase_end(trainctl_ctl* ctl) {
  if (ctl == nullptr) return fail(TRAINCTL_EINVAL, "trainctl_phase_end: ctl is NULL");
  return guarded([&] {
    ctl->ctl.phase_end();
    return TRAINCTL_OK;
  });
}

int trainctl_saved(trainctl_ctl* ctl, int64_t step, const char* path) {
  if (ctl == nullptr) return fail(TRAINCTL_EINVAL, "trainctl_saved: ctl is NULL");
  if (path == nullptr) return fail(TRAINCTL_EINVAL, "trainctl_saved: path is NULL");
  return guarded([&] {
    return ctl->ctl.saved(step, path)
               ? TRAINCTL_OK
               : fail(TRAINCTL_ESYSTEM, "trainctl_saved: the save at step " + std::to_string(step) +
                                            " is not committed: its marker cannot be written (the log says why)");
  });
}

int trainctl_snapshot(trainctl_ctl* ctl, int64_t step, const void* data, size_t size, const char* ckpt_dir) {
  if (ctl == nullptr) return fail(TRAINCTL_EINVAL, "trainctl_snapshot: ctl is NULL");
  if (ckpt_dir == nullptr) return fail(TRAINCTL_EINVAL, "trainctl_snapshot: ckpt_dir is NULL");
  return guarded([&] {
    return ctl->ctl.snapshot(step, data, size, ckpt_dir)
               ? TRAINCTL_OK
               : fail(TRAINCTL_ESYSTEM, "trainctl_snapshot: the snapshot of step " + std::to_string(step) +
                                            " is not kept (the log says why)");
  });
}

int64_t trainctl_save_begin(trainctl_ctl* ctl, int64_t step, const char* path) {
  if (ctl == nullptr) return fail(TRAINCTL_EINVAL, "trainctl_save_begin: ctl is NULL");
  if (path == nullptr) return fail(TRAINCTL_EINVAL, "trainctl_save_begin: path is NULL");
  int64_t ticket = 0;
  const int rc = guarded([&] {
    ticket = static_cast<int64_t>(ctl->ctl.save_begin(step, path));
    return TRAINCTL_OK;
  });
  return rc == TRAINCTL_OK ? ticket : rc;
}

int trainctl_save_starts(trainctl_ctl* ctl, const char* path) {
  if (ctl == nullptr) return fail(TRAINCTL_EINVAL, "trainctl_save_starts: ctl is NULL");
  if (path == nullptr) return fail(TRAINCTL_EINVAL, "trainctl_save_starts: path is NULL");
  return guarded([&] {
    ctl->ctl.save_starts(path);
    return TRAINCTL_OK;
  });
}

int trainctl_save_end(trainctl_ctl* ctl, int64_t ticket, const char* error) {
  if (ctl == nullptr) return fail(TRAINCTL_EINVAL, "trainctl_save_end: ctl is NULL");
  if (ticket <= 0)
    return fail(TRAINCTL_EINVAL, "trainctl_save_end: ticket " + std::to_string(ticket) +
                                     "; accepted: what trainctl_save_begin returned");
  return guarded(
      [&] { return ctl->ctl.save_end(static_cast<std::uint64_t>(ticket), error != nullptr ? error : "") ? 1 : 0; });
}

int trainctl_wait_saves(trainctl_ctl* ctl, double timeout_s) {
  if (ctl == nullptr) return fail(TRAINCTL_EINVAL, "trainctl_wait_saves: ctl is NULL");
  return guarded([&] { return static_cast<int>(ctl->ctl.wait_for_saves(timeout_s)); });
}

int trainctl_pending_saves(const trainctl_ctl* ctl) {
  if (ctl == nullptr) return fail(TRAINCTL_EINVAL, "trainctl_pending_saves: ctl is NULL");
  return static_cast<int>(ctl->ctl.pending_saves());
}

int trainctl_note_error(trainctl_ctl* ctl, const char* text) {
  if (ctl == nullptr) return fail(TRAINCTL_EINVAL, "trainctl_note_error: ctl is NULL");
  if (text == nullptr) return fail(TRAINCTL_EINVAL, "trainctl_note_error: text is NULL");
  return guarded([&] {
    ctl->ctl.note_error(text);
    return TRAINCTL_OK;
  });
}

int trainctl_check_every(const trainctl_ctl* ctl) {
  if (ctl == nullptr) return fail(TRAINCTL_EINVAL, "trainctl_check_every: ctl is NULL");
  return ctl->ctl.check_every();
}

const char* trainctl_state_path(const trainctl_ctl* ctl) { return ctl != nullptr ? ctl->ctl.state_path().c_str() : ""; }

uint64_t trainctl_stat_calls(const trainctl_ctl* ctl) { return ctl != nullptr ? ctl->ctl.stat_calls() : 0; }

}  // extern "C"
