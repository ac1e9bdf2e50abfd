// What the one watcher per node does: stat the registered switch files (inotify for
// changes made on this node, a stat poll for changes made on other NFS/Lustre/GPFS
// clients, which inotify never sees), evaluate the deadline and memory, and publish
// the result into the node state. Used by a controller that holds the publisher lock
// and by the supervisor.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "node_state.hpp"
#include "options.hpp"
#include "owned_fd.hpp"
#include "parse.hpp"

namespace trainctl {

class gpu_memory;

struct publisher_options {
  std::chrono::milliseconds poll_interval = option::kPollIntervalDefault;
  std::chrono::milliseconds memory_interval{1000};
  threshold memory;      // none: no memory flag
  threshold gpu_memory;  // none: NVML is not even loaded
  // Start inotify only this long after the publisher: closing an inotify descriptor
  // costs milliseconds (the kernel waits for its marks to go), which a short step such
  // as `srun true` would otherwise pay at exit. The stat poll covers the gap.
  std::chrono::milliseconds inotify_after{0};
};

class publisher {
 public:
  publisher(node_state& state, publisher_options opts);
  ~publisher();
  publisher(const publisher&) = delete;
  publisher& operator=(const publisher&) = delete;

  // Looks at everything now and publishes. Returns true when something changed.
  bool refresh();
  // Waits until the next thing to look at (a switch directory event, the next stat
  // poll, the deadline, the next memory reading, the next heartbeat) or until wake_fd is
  // readable, then refreshes what is due. `max_wait` bounds the wait.
  void wait_and_refresh(int wake_fd, std::chrono::milliseconds max_wait);

  // Publishes a new deadline (unix ms, 0 for none); it may move while the job runs.
  void set_deadline_ms(std::int64_t deadline_ms);

 private:
  // How often the heartbeat (published_ms) is refreshed: every second, or every poll
  // when that is shorter. Others read it as publish_every_ms.
  static constexpr std::int64_t kHeartbeatMs = 1000;
  std::chrono::milliseconds heartbeat() const;
  bool refresh_switches();
  bool refresh_memory();
  bool refresh_deadline();
  void sync_watches();
  bool drain_inotify();
  void set_flag(std::uint32_t bit, bool on, bool& changed);

  node_state& state_;
  publisher_options opts_;
  owned_fd inotify_fd_;
  std::uint32_t watched_seq_ = ~0u;
  struct watch {
    int wd;
    std::string dir;
  };
  std::vector<watch> watches_;
  std::unique_ptr<gpu_memory> gpu_;
  std::chrono::steady_clock::time_point next_stat_{}, next_memory_{}, inotify_at_{};
};

}  // namespace trainctl
