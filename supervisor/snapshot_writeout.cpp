#include "snapshot_writeout.hpp"

#include <fcntl.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>

#include "committed_saves.hpp"
#include "node_state.hpp"
#include "owned_fd.hpp"
#include "snapshot_store.hpp"

namespace trainctl {
namespace {

std::string errno_text(int err) { return std::strerror(err); }

// The directory DIR/snapshot-STEP, made if need be (another node's supervisor may make it
// at the same moment), this user's and no link; "" and `why` set when not.
owned_fd snapshot_dir(const snapshot_meta& m, std::string* path, std::string* why) {
  char name[40];
  std::snprintf(name, sizeof name, "snapshot-%lld", static_cast<long long>(m.step));
  *path = m.ckpt_dir + "/" + name;
  if (::mkdir(m.ckpt_dir.c_str(), 0777) != 0 && errno != EEXIST) {
    *why = "cannot make " + m.ckpt_dir + ": " + errno_text(errno);
    return owned_fd();
  }
  // A link of the user's or root's is followed (a checkpoint directory on scratch), as
  // resume_path() follows it; another user's could lead to another run's saves.
  const std::string behind = foreign_link(m.ckpt_dir);
  if (!behind.empty()) {
    *why = m.ckpt_dir + " is " + behind + ", not yours: refused";
    return owned_fd();
  }
  owned_fd parent(::open(m.ckpt_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!parent) {
    *why = "cannot open " + m.ckpt_dir + ": " + errno_text(errno);
    return owned_fd();
  }
  if (::mkdirat(parent.get(), name, 0777) != 0 && errno != EEXIST) {
    *why = "cannot make " + *path + ": " + errno_text(errno);
    return owned_fd();
  }
  owned_fd dir(::openat(parent.get(), name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  struct stat st {};
  if (!dir || ::fstat(dir.get(), &st) != 0 || st.st_uid != ::geteuid()) {
    *why = *path + " is not a directory of this user's";
    return owned_fd();
  }
  return dir;
}

// Copies the slot's bytes into dir/rank-R.snapshot through a temporary name; "" when in
// place, else why not (nothing left behind then).
std::string copy_out(const snapshot_slot& s, int dir, const std::string& dir_path, std::int64_t bound_ms) {
  const std::string final_name = "rank-" + std::to_string(s.meta.rank) + ".snapshot";
  const std::string tmp = "." + final_name + ".writing." + std::to_string(::getpid());
  const owned_fd in(::open(s.path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!in) return "cannot read its slot " + s.path + ": " + errno_text(errno);
  // A name of its own, made here (O_EXCL): the directory may be a team's, and what
  // another put under the name (a FIFO would block) is not written through.
  owned_fd out(::openat(dir, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644));
  if (!out) return "cannot write in " + dir_path + ": " + errno_text(errno);
  const auto give_up = [&](const std::string& why) {
    ::unlinkat(dir, tmp.c_str(), 0);
    return why;
  };
  off_t off = static_cast<off_t>(kSnapshotHeaderBytes);
  std::uint64_t left = s.bytes;
  while (left > 0) {
    if (unix_now_ms() > bound_ms) return give_up("its bound came before the write ended");
    const ssize_t n = ::sendfile(out.get(), in.get(), &off, std::min<std::uint64_t>(left, 64u << 20));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return give_up("cannot write " + dir_path + "/" + final_name + ": " + errno_text(n < 0 ? errno : EIO));
    left -= static_cast<std::uint64_t>(n);
  }
  if (::fsync(out.get()) != 0) return give_up("cannot write " + dir_path + "/" + final_name + ": " + errno_text(errno));
  out.reset();
  if (::renameat(dir, tmp.c_str(), dir, final_name.c_str()) != 0)
    return give_up("cannot name " + dir_path + "/" + final_name + ": " + errno_text(errno));
  ::fsync(dir);
  return "";
}

// The newest step committed in `dir` (-1: none, or it cannot be read).
std::int64_t newest_committed_step(const std::string& dir) {
  try {
    const auto found = newest_committed(dir);
    return found ? found->step : -1;
  } catch (const std::exception&) {
    return -1;
  }
}

}  // namespace

snapshot_writeout write_out_snapshots(const std::string& state_path, bool rank_died, std::int64_t bound_unix_ms) {
  snapshot_writeout w;
  const std::vector<snapshot_slot> slots = rank_died ? whole_snapshots(state_path) : std::vector<snapshot_slot>{};
  std::map<std::string, std::int64_t> committed;  // per checkpoint directory
  std::map<std::int64_t, int> written_per_rank;
  for (const snapshot_slot& s : slots) {
    auto at = committed.find(s.meta.ckpt_dir);
    if (at == committed.end()) at = committed.emplace(s.meta.ckpt_dir, newest_committed_step(s.meta.ckpt_dir)).first;
    if (s.meta.step <= at->second) {  // a save as new is committed: this one would replay nothing less
      ++w.older;
      w.older_than = at->second;
      continue;
    }
    std::string dir_path, why;
    const owned_fd dir = snapshot_dir(s.meta, &dir_path, &why);
    if (why.empty()) why = copy_out(s, dir.get(), dir_path, bound_unix_ms);
    if (why.empty()) {
      commit_marker m;
      m.step = s.meta.step;
      m.rank = s.meta.rank;
      m.world = s.meta.world;
      m.run = s.meta.run;
      m.attempt = s.meta.attempt;
      try {
        commit_checkpoint(dir_path, m);
      } catch (const std::exception& e) {
        why = e.what();
      }
    }
    if (!why.empty()) {
      if (!dir_path.empty()) ::rmdir(dir_path.c_str());  // only when empty: no other rank's part
      w.failed.push_back({s.meta.rank, s.meta.step, why});
      continue;
    }
    ++written_per_rank[s.meta.rank];
    w.newest = std::max(w.newest, s.meta.step);
    w.oldest = w.oldest < 0 ? s.meta.step : std::min(w.oldest, s.meta.step);
  }
  w.ranks = static_cast<int>(written_per_rank.size());
  remove_snapshots(state_path);
  return w;
}

}  // namespace trainctl
