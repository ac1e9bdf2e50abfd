#include "publisher.hpp"
#include "log_line.hpp"

#include <poll.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>

#include "cgroup_memory.hpp"
#include "deadline_fields.hpp"
#include "gpu_memory.hpp"
#include "notice_fields.hpp"
#include "publisher_fields.hpp"
#include "switch_fields.hpp"
#include "switch_paths.hpp"

namespace trainctl {
namespace {

using clock = std::chrono::steady_clock;
// Mtimes closer than this are one touch. `touch` of a missing file creates it and then
// sets its times: two mtimes, which a loaded node sets milliseconds apart (the creation
// takes the clock tick, 4 ms coarse; the toucher may wait for a CPU in between). With
// 10 ms, a node whose publisher looked between the two counted two touches (sid, 2 cores
// under load: a second save 10 steps after the first).
constexpr std::int64_t kOneTouchNs = std::int64_t{250} * 1000 * 1000;

}  // namespace

publisher::publisher(node_state& state, publisher_options opts) : state_(state), opts_(opts) {
  inotify_at_ = clock::now() + opts_.inotify_after;
  if (opts_.inotify_after.count() == 0) inotify_fd_.reset(inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
  if (opts_.gpu_memory.enabled()) {
    gpu_ = std::make_unique<gpu_memory>();
    if (!gpu_->available())
      log_line(kLogWarning,
               "trainctl: TRAINCTL_GPU_MIN_FREE is set but NVML is not available (%s); no GPU memory check\n",
               gpu_->why_not().c_str());
  }
  // The heartbeat's interval, not the switches' poll: others take the role over a few
  // seconds after the heartbeat stops, within one poll interval (issue 34: 24-29 s).
  publisher_fields::set_interval(state_, static_cast<std::int32_t>(heartbeat().count()));
}

std::chrono::milliseconds publisher::heartbeat() const {
  return std::min(opts_.poll_interval, std::chrono::milliseconds(kHeartbeatMs));
}

publisher::~publisher() = default;

void publisher::set_flag(std::uint32_t bit, bool on, bool& changed) { changed |= notice_fields::set(state_, bit, on); }

void publisher::set_deadline_ms(std::int64_t deadline_ms) {
  deadline_fields::set_deadline(state_, deadline_ms);
  if (refresh_deadline()) notice_fields::changed(state_);  // the flag too
}

bool publisher::refresh_switches() {
  bool changed = false, any_exit = false;
  std::int64_t saves = 0;
  for (const auto& slot : switch_fields::ready(state_)) {
    const std::int64_t token = switch_token(slot.path);
    publisher_fields::count_stat(state_);
    if (slot.kind == switch_kind::exit) {
      changed |= switch_fields::look_exit(state_, slot.slot, token);
      any_exit |= token != 0;
    } else {
      // A touch is a newer mtime, kOneTouchNs past the last one.
      changed |= switch_fields::look_save(state_, slot.slot, token, kOneTouchNs);
      saves += switch_fields::count(state_, slot.slot);
    }
  }
  switch_fields::set_save_total(state_, saves);
  set_flag(kFlagExitSwitch, any_exit, changed);
  next_stat_ = clock::now() + opts_.poll_interval;
  return changed;
}

bool publisher::refresh_deadline() {
  bool changed = false;
  const std::int64_t deadline = deadline_fields::deadline_ms(state_);
  set_flag(kFlagDeadline, deadline > 0 && unix_now_ms() >= deadline, changed);
  return changed;
}

bool publisher::refresh_memory() {
  bool crossed = false;
  if (opts_.memory.enabled()) {
    if (auto r = read_memory()) crossed |= memory_crossed(*r, opts_.memory);
  }
  if (gpu_ && gpu_->available()) {
    if (auto g = gpu_->read()) crossed |= gpu_crossed(*g, opts_.gpu_memory);
  }
  next_memory_ = clock::now() + opts_.memory_interval;
  bool changed = false;
  // Sticky: memory that dipped back below the threshold does not withdraw the exit.
  if (crossed) set_flag(kFlagMemory, true, changed);
  return changed;
}

bool publisher::refresh() {
  sync_watches();
  bool changed = refresh_switches();
  changed |= refresh_deadline();
  if (opts_.memory.enabled() || gpu_) changed |= refresh_memory();
  publisher_fields::beat(state_, unix_now_ms());
  if (changed) notice_fields::changed(state_);
  return changed;
}

void publisher::sync_watches() {
  const std::uint32_t seq = notice_fields::seq(state_);
  if (!inotify_fd_ || seq == watched_seq_) return;
  watched_seq_ = seq;
  for (const auto& slot : switch_fields::ready(state_)) {
    const std::string dir = dir_of(slot.path);
    if (std::any_of(watches_.begin(), watches_.end(), [&](const watch& w) { return w.dir == dir; })) continue;
    const int wd = inotify_add_watch(
        inotify_fd_.get(), dir.c_str(),
        IN_CREATE | IN_DELETE | IN_MOVED_TO | IN_MOVED_FROM | IN_ATTRIB | IN_CLOSE_WRITE | IN_ONLYDIR);
    // A directory that does not exist yet is covered by the stat poll; retried on the next change.
    if (wd >= 0)
      watches_.push_back({wd, dir});
    else
      watched_seq_ = ~0u;
  }
}

// True when an event names one of the switch files (a busy checkpoint directory does
// not make the watcher stat every switch on every write).
bool publisher::drain_inotify() {
  alignas(inotify_event) char buf[4096];
  bool relevant = false;
  while (true) {
    const ssize_t n = read(inotify_fd_.get(), buf, sizeof buf);
    if (n <= 0) break;
    for (char* p = buf; p < buf + n;) {
      const auto* ev = reinterpret_cast<const inotify_event*>(p);
      p += sizeof(inotify_event) + ev->len;
      if (ev->mask & IN_Q_OVERFLOW) relevant = true;
      if (ev->len == 0) continue;
      const auto w = std::find_if(watches_.begin(), watches_.end(), [&](const watch& x) { return x.wd == ev->wd; });
      if (w == watches_.end()) continue;
      const std::string path = (w->dir == "/" ? "" : w->dir) + "/" + ev->name;
      for (const auto& slot : switch_fields::ready(state_))
        if (path == slot.path) relevant = true;
    }
  }
  return relevant;
}

void publisher::wait_and_refresh(int wake_fd, std::chrono::milliseconds max_wait) {
  auto now = clock::now();
  if (!inotify_fd_ && opts_.inotify_after.count() > 0 && now >= inotify_at_) {
    inotify_fd_.reset(inotify_init1(IN_NONBLOCK | IN_CLOEXEC));  // -1: stat polling alone still works
    watched_seq_ = ~0u;
    sync_watches();
    refresh_switches();  // what changed before the watches existed
    inotify_at_ = clock::time_point::max();
  }
  auto until = std::min({now + max_wait, next_stat_, now + heartbeat()});
  if (!inotify_fd_ && inotify_at_ != clock::time_point::max()) until = std::min(until, inotify_at_);
  if (opts_.memory.enabled() || gpu_) until = std::min(until, next_memory_);
  const std::int64_t deadline = deadline_fields::deadline_ms(state_);
  if (deadline > 0 && (notice_fields::flags(state_) & kFlagDeadline) == 0) {
    const auto to_deadline = std::chrono::milliseconds(std::max<std::int64_t>(0, deadline - unix_now_ms()));
    until = std::min(until, now + to_deadline);
  }
  const auto timeout = std::chrono::duration_cast<std::chrono::milliseconds>(until - now).count();
  pollfd fds[2] = {{wake_fd, POLLIN, 0}, {inotify_fd_.get(), POLLIN, 0}};
  const int nfds = inotify_fd_ ? 2 : 1;
  const int ready = poll(fds, nfds, static_cast<int>(std::max<long long>(0, timeout)));
  bool changed = false;
  if (ready > 0 && nfds == 2 && (fds[1].revents & POLLIN) && drain_inotify()) changed |= refresh_switches();
  const auto after = clock::now();
  if (after >= next_stat_) {
    sync_watches();
    changed |= refresh_switches();
  }
  if ((opts_.memory.enabled() || gpu_) && after >= next_memory_) changed |= refresh_memory();
  changed |= refresh_deadline();
  publisher_fields::beat(state_, unix_now_ms());
  if (changed) notice_fields::changed(state_);
}

}  // namespace trainctl
