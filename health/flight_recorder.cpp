#include "flight_recorder.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>

#include "env_names.hpp"
#include "owned_fd.hpp"
#include "stack_dump.hpp"

namespace trainctl {
namespace {

// torch's own advice for a trace buffer (entries, each a collective: a few hundred bytes).
constexpr char kBufferEntries[] = "2000";

owned_fd open_rank_dir(const std::string& dir) {
  return owned_fd(open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
}

}  // namespace

std::vector<std::pair<std::string, std::string>> flight_recorder_env(const std::string& state_dir) {
  // The recorder's own names only: torch that has them warns on every rank where the
  // older TORCH_NCCL_TRACE_BUFFER_SIZE and TORCH_NCCL_DEBUG_INFO_TEMP_FILE are set.
  return {
      {env_var::kTorchFrBufferSize, kBufferEntries},
      {env_var::kTorchNcclDumpOnTimeout, "1"},
      {env_var::kTorchFrDumpTempFile, state_dir + "/nccl_trace_rank_"},
      {env_var::kTorchNcclDebugInfoPipeFile, state_dir + "/nccl_pipe_"},
  };
}

void remove_flight_recorder_files(const std::string& rank_dir, pid_t pid) noexcept {
  const owned_fd dir(open(rank_dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!dir) return;
  for (const char* suffix : {".pipe", ".txt", ".pkl"}) {
    const std::string name = "fr." + std::to_string(pid) + suffix;
    struct stat st {};
    if (fstatat(dir.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_uid == getuid())
      unlinkat(dir.get(), name.c_str(), 0);
  }
}

flight_recorder_request::flight_recorder_request(std::string rank_dir, pid_t pid)
    : dir_(std::move(rank_dir)), stem_("fr." + std::to_string(pid)), at_(std::chrono::steady_clock::now()) {
  const owned_fd dir = open_rank_dir(dir_);
  if (!dir) return;
  // Only this rank's answer to this request counts: the last one goes first.
  unlinkat(dir.get(), (stem_ + ".txt").c_str(), 0);
  unlinkat(dir.get(), (stem_ + ".pkl").c_str(), 0);
  // O_NONBLOCK: ENXIO at once where no thread listens, never a wait.
  const owned_fd pipe(openat(dir.get(), (stem_ + ".pipe").c_str(), O_WRONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC));
  struct stat st {};
  if (!pipe || fstat(pipe.get(), &st) != 0 || !S_ISFIFO(st.st_mode) || st.st_uid != getuid()) return;
  asked_ = write(pipe.get(), "1\n", 2) == 2;
}

bool flight_recorder_request::answered() const {
  if (!asked_) return false;
  const owned_fd dir = open_rank_dir(dir_);
  return dir && open_own_file(dir.get(), stem_ + ".txt", O_RDONLY, 0);
}

std::vector<std::string> flight_recorder_request::collect(std::string* dump) const {
  if (!asked_) return {};
  if (!answered()) {
    const auto s = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - at_).count();
    return {"none the rank did not answer within " + std::to_string(s) +
            " s: its Python holds the GIL, or it is stopped"};
  }
  const owned_fd dir = open_rank_dir(dir_);
  std::vector<std::string> lines;
  std::istringstream in(dir ? read_own_text(dir.get(), stem_ + ".txt") : "");
  for (std::string line; std::getline(in, line) && lines.size() < 64;)
    if (!line.empty()) lines.push_back(line);
  if (lines.empty()) lines.push_back("none the rank's answer was empty");
  if (dir && dump != nullptr) *dump = read_own_text(dir.get(), stem_ + ".pkl");
  return lines;
}

}  // namespace trainctl
