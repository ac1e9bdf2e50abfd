// The rank's side of snapshots in host memory: ctl.snapshot(step, bytes, ckpt_dir) into
// its two slots beside the node state (protocol/snapshot_store.hpp); the node's supervisor
// writes them out when a rank dies (supervisor/snapshot_writeout).
#include <cinttypes>

#include "committed_saves.hpp"
#include "controller_impl.hpp"
#include "env_names.hpp"

namespace trainctl {

bool controller::snapshot(std::int64_t step, const void* data, std::size_t size, const std::string& ckpt_dir) {
  impl& m = *impl_;
  if (step < 0)
    throw std::invalid_argument("trainctl: snapshot(): step " + std::to_string(step) + "; accepted: 0 or more");
  if (ckpt_dir.empty() || ckpt_dir[0] != '/')
    throw std::invalid_argument("trainctl: snapshot(): checkpoint directory '" + ckpt_dir +
                                "'; accepted: an absolute path (where the supervisor writes the snapshot out)");
  if (data == nullptr && size > 0) throw std::invalid_argument("trainctl: snapshot(): no data for its size");
  snapshot_slots& s = m.snaps;
  // One line the first time a snapshot is not kept (every few steps, it would flood).
  const bool say = !s.not_kept_said;
  // Only a supervisor writes snapshots out, and removes them at the task's end: without
  // one they would stay in memory for nothing.
  if (!m.file || env_text(env_var::kTrainctlState).empty()) {
    s.not_kept_said = true;
    if (say)
      log_line(kLogWarning,
               "trainctl: snapshot of step %" PRId64
               " not kept: no trainctl supervisor on this node (trainctl-run or the SPANK plugin) writes it out\n",
               step);
    return false;
  }
  const long world = m.cfg.world_size > 0 ? m.cfg.world_size : world_size();
  if (m.cfg.rank >= world)
    throw std::invalid_argument("trainctl: snapshot(): this process is rank " + std::to_string(m.cfg.rank) +
                                " but the world has " + std::to_string(world));
  if (!s.writer) s.writer = std::make_unique<snapshot_writer>(m.file->path(), m.cfg.rank);
  snapshot_meta meta;
  meta.step = step;
  meta.rank = m.cfg.rank;
  meta.world = world;
  meta.run = controller::run_id();
  meta.attempt = save_attempt(env_text);
  meta.ckpt_dir = ckpt_dir;
  try {
    s.writer->write(meta, data, size);
  } catch (const std::system_error& e) {
    s.not_kept_said = true;
    if (say) log_line(kLogWarning, "%s: not kept (the snapshot before stays kept)\n", e.what());
    return false;
  }
  return true;
}

}  // namespace trainctl
