// Reading markers back: the newest save every rank committed, and what could not be
// trusted, said in one line (committed_saves.hpp).
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <system_error>
#include <vector>

#include "commit_marker_io.hpp"
#include "committed_saves.hpp"
#include "owned_fd.hpp"

namespace trainctl {
namespace {

[[noreturn]] void throw_errno(int err, const std::string& what) {
  throw std::system_error(err, std::generic_category(), what);
}

// Where the markers of checkpoint `name` in the directory `dir` live: inside it (a
// directory, opened here) or beside it (a file); `prefix` + RANK names each.
struct marker_place {
  owned_fd inside;  // the checkpoint directory, or none for a file
  std::string prefix;
  int at(int dir) const { return inside ? inside.get() : dir; }
};

std::optional<marker_place> place_of(int dir, const std::string& name) {
  struct stat st {};
  if (::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !owned_by_me(st)) return std::nullopt;
  marker_place p;
  if (S_ISREG(st.st_mode)) {
    p.prefix = marker_prefix_beside(name);
    return p;
  }
  if (!S_ISDIR(st.st_mode)) return std::nullopt;
  p.inside.reset(::openat(dir, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!p.inside || ::fstat(p.inside.get(), &st) != 0 || !owned_by_me(st)) return std::nullopt;
  p.prefix = kMarkerInside;
  return p;
}

// Checkpoints are named by their step (checkpoint-1200, step_00001200, epoch=3-step=100.ckpt):
// an entry with no digit in its name (FINISHED, config.json, latest) is no save.
bool named_like_a_save(const std::string& name) {
  return std::any_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// One entry resume could not trust, and why.
struct distrusted {
  std::string name;
  std::int64_t step = -1;  // -1: unknown (no marker)
  std::string why;
};

std::string rank_list(const std::vector<std::int64_t>& ranks) {
  std::string out;
  for (std::size_t i = 0; i < ranks.size() && i < 3; ++i) out += (i ? ", " : "") + std::to_string(ranks[i]);
  if (ranks.size() > 3) out += " and " + std::to_string(ranks.size() - 3) + " more";
  return out;
}

// Whether every rank of rank 0's world committed the same save of the checkpoint at
// `place`; "" when so, else why not.
std::string completeness(int dir, const marker_place& place, const commit_marker& first) {
  std::vector<std::int64_t> missing;
  bool other_attempt = false, other_save = false;
  for (std::int64_t r = 1; r < first.world; ++r) {
    const auto m = read_marker(place.at(dir), marker_name(place.prefix, r));
    if (!m || m->rank != r) {
      missing.push_back(r);
    } else if (m->step != first.step || m->world != first.world || m->run != first.run || m->name != first.name ||
               m->version != first.version) {
      other_save = true;
    } else if (m->attempt != first.attempt) {
      other_attempt = true;
    }
  }
  const std::string of = " of " + std::to_string(first.world);
  if (!missing.empty())
    return std::string(missing.size() == 1 ? "rank " : "ranks ") + rank_list(missing) + of +
           (missing.size() == 1 ? " has" : " have") + " not committed it (still being written, cut, or failed)";
  if (other_attempt) return "its ranks' markers come from different attempts (a save redone in place, then cut)";
  if (other_save) return "its ranks' markers tell of different saves";
  return "";
}

std::string line_of(const std::vector<distrusted>& all) {
  std::string out = std::to_string(all.size()) + (all.size() == 1 ? " save is" : " saves are") + " not trusted: ";
  for (std::size_t i = 0; i < all.size() && i < 3; ++i) {
    const distrusted& d = all[i];
    out += (i ? "; " : "") + d.name + " (" + (d.step >= 0 ? "step " + std::to_string(d.step) + ": " : "") + d.why + ")";
  }
  if (all.size() > 3) out += "; and " + std::to_string(all.size() - 3) + " more";
  return out;
}

std::string exposure(const std::string& path, const struct stat& st) {
  if (!owned_by_me(st))
    return path + " belongs to uid " + std::to_string(st.st_uid) + ": its owner can remove or replace your saves";
  if ((st.st_mode & 022) != 0 && (st.st_mode & S_ISVTX) == 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return "others can write in " + path + " (mode " + mode +
           "): a teammate can remove, hide or replace a save there; chmod go-w " + path +
           " (switches and logs can stay in a shared directory)";
  }
  return "";
}

// The checkpoint directory, opened to be listed; an empty fd when nothing is saved there
// yet. Throws for another user's link (it could lead to another run's saves) or a
// directory it cannot read.
owned_fd open_saves_dir(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return owned_fd();  // a fresh start
    throw_errno(errno, "trainctl: resume_path(): cannot read " + path);
  }
  const std::string link = foreign_link(path);
  if (!link.empty())
    throw_errno(EPERM, "trainctl: resume_path(): " + path + " is " + link +
                           ", not yours: refused (it could lead to another run's saves); use the directory "
                           "itself, or a link of your own");
  owned_fd dir(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));  // a link of the user's: followed
  if (!dir && errno != ENOENT) throw_errno(errno, "trainctl: resume_path(): cannot read " + path);
  return dir;  // empty for a dangling link of the user's: nothing saved yet
}

}  // namespace

resume_scan scan_saves(const std::string& path) {
  resume_scan out;
  const owned_fd dir = open_saves_dir(path);
  if (!dir) return out;
  struct stat st {};
  if (::fstat(dir.get(), &st) == 0) out.exposed = exposure(path, st);
  owned_fd listed(::dup(dir.get()));
  std::unique_ptr<DIR, int (*)(DIR*)> entries(listed ? ::fdopendir(listed.get()) : nullptr, ::closedir);
  if (entries) listed.release();  // closedir closes it
  if (!entries) throw_errno(errno, "trainctl: resume_path(): cannot read " + path);

  struct candidate {
    std::string name;
    commit_marker first;  // rank 0's marker
  };
  std::vector<candidate> candidates;
  std::vector<distrusted> unmarked, others;  // unmarked: no step to order them by
  while (const dirent* e = ::readdir(entries.get())) {
    const std::string name = e->d_name;
    if (name.empty() || name[0] == '.') continue;  // markers, temporaries, . and ..
    struct stat est {};
    if (::fstatat(dir.get(), name.c_str(), &est, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (S_ISLNK(est.st_mode)) {  // an alias (latest -> step_200) is fine; a link to nothing is a lost save
      struct stat target {};
      if (named_like_a_save(name) && ::fstatat(dir.get(), name.c_str(), &target, 0) != 0 && errno == ENOENT)
        unmarked.push_back({name, -1, "a link to nothing: a save moved away, or a mount absent"});
      continue;
    }
    const auto place = place_of(dir.get(), name);
    if (!place) continue;  // another user's, or no file or directory: never resumed, said nowhere
    const auto first = read_marker(place->at(dir.get()), marker_name(place->prefix, 0));
    if (first && first->rank == 0) {
      if (first->version >= 2 && first->name != encode_marker_name(name))
        others.push_back({name, first->step, "its markers name another checkpoint: copied or renamed"});
      else
        candidates.push_back({name, *first});
      continue;
    }
    if (!named_like_a_save(name)) continue;
    const auto second = read_marker(place->at(dir.get()), marker_name(place->prefix, 1));
    if (second && second->rank == 1)
      others.push_back({name, second->step, "rank 0 of " + std::to_string(second->world) + " has not committed it"});
    else
      unmarked.push_back({name, -1,
                          "no trainctl marker: still being written, or saved before trainctl, committed on rank 0 "
                          "only, or restored by hand; ctl.saved() on every rank commits a save"});
  }
  std::sort(candidates.begin(), candidates.end(), [](const candidate& a, const candidate& b) {
    return a.first.step != b.first.step ? a.first.step > b.first.step : a.name > b.name;
  });
  for (const auto& c : candidates) {
    const auto place = place_of(dir.get(), c.name);
    if (!place) continue;
    const std::string why = c.first.world > 1 ? completeness(dir.get(), *place, c.first) : "";
    if (why.empty()) {
      out.found = committed_checkpoint{path + (path.back() == '/' ? "" : "/") + c.name, c.first.step, c.first.world};
      break;
    }
    others.push_back({c.name, c.first.step, why});
  }
  std::vector<distrusted> told;
  for (auto& d : others)
    if (!out.found || d.step > out.found->step) told.push_back(std::move(d));
  std::sort(told.begin(), told.end(), [](const distrusted& a, const distrusted& b) {
    return a.step != b.step ? a.step > b.step : a.name > b.name;
  });
  if (!out.found) told.insert(told.end(), unmarked.begin(), unmarked.end());
  out.untrusted = static_cast<int>(told.size());
  if (!told.empty()) out.why = line_of(told);
  return out;
}

std::optional<committed_checkpoint> newest_committed(const std::string& dir) { return scan_saves(dir).found; }

}  // namespace trainctl
