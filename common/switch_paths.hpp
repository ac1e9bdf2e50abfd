// Default switch paths, shared by trainctl-run and the SPANK plugin so that a teammate
// finds the same file either way: <submit dir>/kill-switch-<job name> (and
// save-switch-...), one per job name so that every task of an array and every
// resubmission of the same job obeys one switch.
#pragma once

#include <cstdint>
#include <string>

namespace trainctl {

// `submit_dir` empty: the current directory; `job_name` empty: "trainctl".
std::string default_switch_path(const std::string& kind, const std::string& submit_dir, const std::string& job_name);

// The directory a switch file is in (what inotify watches and what must be searchable):
// "/x" for "/x/KILL", "/" for "/KILL", "." for a bare name.
std::string dir_of(const std::string& path);

// A switch's token: its mtime in ns while the file exists (at least 1), 0 while it
// does not. A newer touch gives a larger token; agreement reduces tokens with MAX.
std::int64_t switch_token(const std::string& path);

}  // namespace trainctl
