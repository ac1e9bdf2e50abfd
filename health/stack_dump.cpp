#include "stack_dump.hpp"

#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "dir_entries.hpp"
#include "env.hpp"
#include "env_names.hpp"
#include "flight_recorder.hpp"
#include "node_names.hpp"
#include "node_state.hpp"
#include "parse.hpp"
#include "private_files.hpp"
#include "state_dir.hpp"
#include "subprocess.hpp"
#include "time_text.hpp"
#include "user_paths.hpp"

namespace trainctl {
namespace {

using std::chrono::milliseconds;

std::string now_text() { return local_timestamp(std::time(nullptr)); }

// Whether `pid` has a handler for `sig` (SigCgt in /proc/PID/status): a signal it does
// not catch is never sent, whatever its default action.
bool catches(pid_t pid, int sig) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line))
    if (line.compare(0, 7, "SigCgt:") == 0) {
      const unsigned long long mask = std::strtoull(line.c_str() + 7, nullptr, 16);
      return sig >= 1 && sig <= 64 && ((mask >> (sig - 1)) & 1) != 0;
    }
  return false;
}

// A rank's stacks.<pid>, opened as the rest of the node state is: this user's regular
// file, no link followed, never blocking. In a state directory someone squatted, a FIFO
// under the name held a plain open (and the whole hang dump) until the dump's limit.
owned_fd open_stacks_file(const std::string& path) {
  owned_fd fd(open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
  struct stat st {};
  if (fd && (fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != getuid())) fd.reset();
  return fd;
}

off_t file_size(const std::string& path) {
  const owned_fd fd = open_stacks_file(path);
  struct stat st {};
  return fd && fstat(fd.get(), &st) == 0 ? st.st_size : -1;
}

// Whether something other than this user's regular file sits at `path` (a link, a FIFO,
// another user's file): the rank is then not asked for its Python stacks.
bool foreign_at(const std::string& path) {
  struct stat st {};
  return lstat(path.c_str(), &st) == 0 && (!S_ISREG(st.st_mode) || st.st_uid != getuid());
}

// What the rank wrote into its stacks file after `from`, once it stopped growing.
std::string python_stacks(const std::string& path, off_t from, milliseconds wait) {
  const auto end = std::chrono::steady_clock::now() + wait;
  off_t last = from;
  int still = 0;
  while (std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(milliseconds(20));
    const off_t now = file_size(path);
    if (now > from && now == last && ++still >= 3) break;  // 60 ms without growth
    if (now != last) still = 0;
    last = now;
  }
  const owned_fd fd = open_stacks_file(path);
  if (!fd || last <= from) return "";
  std::string out(static_cast<size_t>(last - from), '\0');
  const ssize_t got = pread(fd.get(), out.data(), out.size(), from);
  out.resize(got > 0 ? static_cast<size_t>(got) : 0);
  return out;
}

std::string native_stacks(pid_t pid, milliseconds limit, std::string* tool) {
  const std::string p = std::to_string(pid);
  const std::vector<std::vector<std::string>> tools = {
      {"eu-stack", "-p", p},
      {"gdb", "-p", p, "-batch", "-nx", "-ex", "set pagination off", "-ex", "thread apply all bt"}};
  for (const auto& argv : tools) {
    child_spec spec;
    spec.argv = argv;
    spec.deadline = limit;
    const child_result r = run_child(spec);
    if (r.finished && WIFEXITED(r.status) && WEXITSTATUS(r.status) == 127) continue;  // not installed
    *tool = argv[0];
    if (!r.finished) return "(" + r.error + ")\n" + r.output;
    return r.output.empty() ? "(" + argv[0] + " printed nothing: " + r.error + ")\n" : r.output;
  }
  *tool = "none";
  return "(neither eu-stack nor gdb is installed: no native stack)\n";
}

// PyTorch's NCCL flight recorder (TORCH_FR_BUFFER_SIZE > 0) reads a FIFO named
// TORCH_NCCL_DEBUG_INFO_PIPE_FILE<rank>.pipe; anything written there makes the rank
// dump its recent collectives to TORCH_NCCL_DEBUG_INFO_TEMP_FILE<rank>, from a
// thread of its own, whatever Python is doing. Returns the line for the stack file.
std::string request_flight_recorder(pid_t pid, int rank) {
  const std::string stem = proc_environ_value(pid, env_var::kTorchNcclDebugInfoPipeFile);
  if (stem.empty() || rank < 0) return "";
  const std::string pipe = stem + std::to_string(rank) + ".pipe";
  struct stat st {};
  if (lstat(pipe.c_str(), &st) != 0 || !S_ISFIFO(st.st_mode) || st.st_uid != getuid())
    return "(no flight recorder pipe " + pipe + ": the run has no NCCL group, or its flight recorder is off)\n";
  owned_fd fd(open(pipe.c_str(), O_WRONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) return "(flight recorder pipe " + pipe + ": nobody reads it: " + std::strerror(errno) + ")\n";
  const bool ok = write(fd.get(), "1\n", 2) == 2;
  fd.reset();
  std::string out = proc_environ_value(pid, env_var::kTorchFrDumpTempFile);
  if (out.empty()) out = proc_environ_value(pid, env_var::kTorchNcclDebugInfoTempFile);  // older torch's name
  if (out.empty()) out = "/tmp/nccl_trace_rank_";
  return ok ? "dump requested through " + pipe + "; PyTorch writes it to " + out + std::to_string(rank) + "\n"
            : "(could not write to " + pipe + ")\n";
}

std::string one_line(std::string s) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  return s;
}

}  // namespace

int stack_signal_from_env() {
  const std::string name = env_set(env_var::kTrainctlStackSignal) ? env_text(env_var::kTrainctlStackSignal) : "URG";
  if (name.empty() || name == "none" || name == "NONE" || name == "0") return 0;
  try {
    return parse_signal(name);
  } catch (const parse_error&) {
    return SIGURG;  // the ranks fall back to URG too, and say so
  }
}

namespace {
// Whether a frame's file is torch's or trainctl's package: not the program's own line.
bool library_file(const std::string& path) {
  return path.find("/torch/") != std::string::npos || path.find("-packages/trainctl/") != std::string::npos;
}
}  // namespace

std::string innermost_python_frame(const std::string& text, const std::string& main_thread, bool programs_own) {
  // Blocks start with "Thread 0x..." or "Current thread 0x..."; frames are
  // '  File "PATH", line N in FUNC', innermost first. Without the main thread's id, its
  // block is the one that ends with the module's frame.
  std::istringstream in(text);
  std::string line, first;
  bool in_block = false, main_block = false;
  while (std::getline(in, line)) {
    if (line.find("hread 0x") != std::string::npos) {
      if (main_block && !first.empty()) return first;
      in_block = true;
      main_block = !main_thread.empty() && line.find("hread " + main_thread) != std::string::npos;
      first.clear();
      continue;
    }
    const size_t f = line.find("File \"");
    if (!in_block || f == std::string::npos) continue;
    const size_t q = line.find('"', f + 6);
    const size_t ln = line.find(", line ", q);
    const size_t fn = line.find(" in ", ln);
    if (q == std::string::npos || ln == std::string::npos || fn == std::string::npos) continue;
    std::string path = line.substr(f + 6, q - f - 6);
    if (programs_own && library_file(path)) continue;
    path = path.substr(path.rfind('/') + 1);
    const std::string frame = line.substr(fn + 4) + " (" + path + ":" + line.substr(ln + 7, fn - ln - 7) + ")";
    if (first.empty()) first = frame;
    if (main_thread.empty() && line.find(" in <module>") != std::string::npos) return first;
  }
  return main_block ? first : "";
}

namespace {
// The function a frame line names, or "" where the unwinder had no symbol: eu-stack
// prints "#1  0x00007f..." alone (or a module after "-"), gdb "#1  0x... in ?? () from".
std::string frame_function(const std::string& line) {
  std::istringstream words(line);
  std::string w, prev;
  while (words >> w) {
    const bool after_address = prev.compare(0, 2, "0x") == 0 && w != "in";
    if (after_address || prev == "in") return w == "??" || w == "-" || w[0] == '/' ? "" : w;
    prev = w;
  }
  return "";
}
}  // namespace

std::string innermost_native_frame(const std::string& text, pid_t pid) {
  // eu-stack: "TID 123:" then "#0  0x00007f... func"; gdb: "Thread 1 (... LWP 123 ...)"
  // then "#0  0x... in func (...) at file:line". The innermost frame with a name: since
  // glibc 2.41 the frame a blocked thread sits in (the syscall stub) often has none.
  std::istringstream in(text);
  std::string line;
  const std::string tid = "TID " + std::to_string(pid) + ":", lwp = "LWP " + std::to_string(pid) + ")";
  bool ours = false;
  while (std::getline(in, line)) {
    if (line.compare(0, 4, "TID ") == 0 || line.compare(0, 7, "Thread ") == 0) {
      ours = line.find(tid) != std::string::npos || line.find(lwp) != std::string::npos;
      continue;
    }
    if (!ours || line.compare(0, 1, "#") != 0) continue;
    const std::string name = frame_function(line);
    if (!name.empty()) return name + " (native)";
  }
  return "";
}

std::string prepare_log_dir(const std::string& dir, bool* group) {
  if (group != nullptr) *group = false;
  struct stat st {};
  if (stat(dir.c_str(), &st) != 0 && errno == ENOENT) {
    // mkdir -p, private: the user did not say who else may read the stacks.
    for (size_t at = 1; at != std::string::npos;) {
      at = dir.find('/', at + 1);
      if (mkdir(dir.substr(0, at).c_str(), 0700) != 0 && errno != EEXIST)
        return "log directory " + dir + " is missing and cannot be created: " + std::strerror(errno);
    }
  }
  if (stat(dir.c_str(), &st) != 0) return "log directory " + dir + ": " + std::strerror(errno);
  if (!S_ISDIR(st.st_mode)) return "log directory " + dir + " is not a directory";
  if (access(dir.c_str(), W_OK | X_OK) != 0) return "log directory " + dir + " is not writable by this user";
  if (group != nullptr) *group = (st.st_mode & S_IWGRP) != 0;
  return "";
}

namespace {
std::string user_name() {
  std::vector<char> buf(16384);
  passwd pw{}, *found = nullptr;
  if (getpwuid_r(getuid(), &pw, buf.data(), buf.size(), &found) == 0 && found != nullptr && valid_node_name(pw.pw_name))
    return pw.pw_name;  // (a user name passes the same test as a node name: no '/', no spaces)
  return std::to_string(getuid());
}

// Whether `path` is a directory this user may keep evidence in (see open_stacks_dir);
// *mine: the name is this user's own (a wrong mode is the user's to fix, not a squat).
bool usable_root(const std::string& path, bool group, bool* mine, std::string* why) {
  *mine = true;
  if (mkdir(path.c_str(), group ? 0750 : 0700) != 0 && errno != EEXIST) {
    *why = "cannot create " + path + ": " + std::strerror(errno);
    return false;
  }
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0) {
    *why = path + ": " + std::strerror(errno);
    return false;
  }
  *mine = st.st_uid == getuid();
  if (!*mine) return false;
  return static_cast<bool>(open_stacks_dir(path, group, why));
}
}  // namespace

std::string evidence_root(const std::string& log_dir, bool group, std::string* why, std::string* note) {
  std::string root = log_dir + "/trainctl-" + user_name();
  bool mine = true;
  std::string problem;
  if (usable_root(root, group, &mine, &problem)) return root;
  if (mine) {
    *why = problem;
    return "";
  }
  struct stat st {};
  lstat(root.c_str(), &st);
  std::string home = user_state_path(env_var::kTrainctlEvidenceHome, "evidence");
  const std::string taken = root + " belongs to uid " + std::to_string(st.st_uid) + ", not to this user";
  if (home.empty() || !make_private_dirs(home.substr(0, home.rfind('/'))) ||
      !usable_root(home, false, &mine, &problem)) {
    *why = taken + ", and the home has no place for it either (" + (home.empty() ? "no HOME" : problem) + ")";
    return "";
  }
  if (note != nullptr) *note = taken + ": hang stacks and crash evidence go to " + home + " instead";
  return home;
}

owned_fd open_stacks_dir(const std::string& path, bool group, std::string* why) {
  if (mkdir(path.c_str(), group ? 0750 : 0700) != 0 && errno != EEXIST) {
    *why = "cannot create " + path + ": " + std::strerror(errno);
    return owned_fd();
  }
  owned_fd fd(open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  struct stat st {};
  if (!fd || fstat(fd.get(), &st) != 0) {
    *why = "cannot open " + path + ": " +
           (errno == ELOOP || errno == ENOTDIR ? "not a directory (a link?)" : std::string(std::strerror(errno)));
    return owned_fd();
  }
  std::string problem;
  if (st.st_uid != getuid())
    problem = "belongs to uid " + std::to_string(st.st_uid) + ", not to this user";
  else if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0)
    problem = "can be written by others (mode " + std::to_string((st.st_mode >> 6) & 7) +
              std::to_string((st.st_mode >> 3) & 7) + std::to_string(st.st_mode & 7) + ")";
  if (!problem.empty()) {
    *why = path + " " + problem + ": not writing stacks there (remove it, or give another --log-dir)";
    return owned_fd();
  }
  return fd;
}

std::string read_own_text(int dir_fd, const std::string& name) {
  const owned_fd fd = open_own_file(dir_fd, name, O_RDONLY, 0);
  if (!fd) return "";
  std::string text;
  char buf[65536];
  ssize_t n;
  while (text.size() < (8u << 20) && (n = read(fd.get(), buf, sizeof buf)) > 0)
    text.append(buf, static_cast<size_t>(n));
  return text;
}

namespace {
// A process's state letter from /proc/PID/stat ('R', 'S', 'D', ...; 0 when unreadable).
char process_state(pid_t pid) {
  const owned_fd fd(open(("/proc/" + std::to_string(pid) + "/stat").c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  char buf[512] = {};
  const ssize_t n = fd ? read(fd.get(), buf, sizeof buf - 1) : -1;
  if (n <= 0) return 0;
  const char* close = std::strrchr(buf, ')');  // the command name may hold anything but not end the field
  return close != nullptr && close[1] == ' ' && close[2] != '\0' ? close[2] : 0;
}

// The first line of `path` (the Python package writes the main thread's id there).
std::string first_line(const std::string& path) {
  const owned_fd fd = open_stacks_file(path);
  if (!fd) return "";
  char buf[128] = {};
  const ssize_t n = read(fd.get(), buf, sizeof buf - 1);
  if (n <= 0) return "";
  std::string line(buf, static_cast<size_t>(n));
  return line.substr(0, line.find('\n'));
}
}  // namespace

owned_fd open_own_file(int dir_fd, const std::string& name, int flags, mode_t mode) {
  owned_fd fd(openat(dir_fd, name.c_str(), flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY, mode));
  if (!fd) return fd;
  struct stat st {};
  if (fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != getuid()) {
    fd.reset();
    errno = EPERM;
  }
  return fd;
}

std::string append_in_dir(int dir_fd, const std::string& name, const std::string& text, mode_t mode) {
  const owned_fd fd = open_own_file(dir_fd, name, O_WRONLY | O_CREAT | O_APPEND, mode);
  if (!fd)
    return std::string("cannot write ") + name + ": " +
           (errno == EPERM ? "not a regular file of this user" : std::strerror(errno));
  const bool ok = write(fd.get(), text.data(), text.size()) == static_cast<ssize_t>(text.size());
  return ok ? "" : std::string("cannot write ") + name + ": " + std::strerror(errno);
}

std::size_t job_wide_summaries(int dir_fd) {
  const std::string text = read_own_text(dir_fd, "summary.txt");
  std::size_t count = 0;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    const auto space = line.find(' ');  // after the time
    if (space != std::string::npos && line.compare(space + 1, 5, "only ") != 0) ++count;
  }
  return count;
}

namespace {
// Waits, up to `limit` from now, until every rank asked has written its flight-recorder
// dump (torch takes about a second for a few thousand entries with their stacks).
void wait_for_recorders(const std::vector<flight_recorder_request>& fr, milliseconds limit) {
  const auto end = std::chrono::steady_clock::now() + limit;
  auto pending = [&] {
    return std::any_of(fr.begin(), fr.end(), [](const auto& r) { return r.asked() && !r.answered(); });
  };
  while (pending() && std::chrono::steady_clock::now() < end) std::this_thread::sleep_for(milliseconds(50));
}

// The rank's flight recorder in its stack file: the digest as header lines (read back by
// read_dumps) and a section; torch's own dump beside it as flight_recorder_rank<R>, the
// name torch's analyzer reads (fr_trace DIR --prefix flight_recorder_rank).
std::string recorder_text(const flight_recorder_request& fr, rank_stack& s, const dump_options& o) {
  std::string dump;
  s.collectives = fr.collect(&dump);
  if (s.collectives.empty()) return "";
  std::string section = "--- flight recorder (torch.distributed, the newest collective of each process group)\n";
  for (const auto& line : s.collectives) section += line + "\n";
  if (!dump.empty() && s.rank >= 0) {
    const std::string name = "flight_recorder_rank" + std::to_string(s.rank);
    const owned_fd fd = open_own_file(o.dir_fd, name, O_WRONLY | O_CREAT | O_TRUNC, o.file_mode);
    const bool ok = fd && write(fd.get(), dump.data(), dump.size()) == static_cast<ssize_t>(dump.size());
    section += ok ? "torch's dump: " + o.out_dir + "/" + name + "\n" : "(torch's dump not saved as " + name + ")\n";
  }
  return section;
}
}  // namespace

std::vector<rank_stack> dump_stacks(const std::vector<proc_info>& ranks, const dump_options& o) {
  const std::string host = node_name();
  // Native stacks first: the stack signal would interrupt a rank blocked in a C call
  // (pause, poll...) and move it, while a ptrace attach restarts the call.
  std::vector<std::string> native(ranks.size()), tool(ranks.size());
  std::vector<char> state(ranks.size());  // before a tracer stops the rank
  for (size_t i = 0; i < ranks.size(); ++i) state[i] = process_state(ranks[i].pid);
  for (size_t i = 0; i < ranks.size(); ++i) native[i] = native_stacks(ranks[i].pid, o.per_rank, &tool[i]);
  // Then every rank writes its own Python stacks and its flight recorder, all at once.
  // A rank writes them beside its node state (TRAINCTL_STATE, which its supervisor set).
  std::vector<off_t> before(ranks.size(), -1);
  std::vector<std::string> py_file(ranks.size()), refused(ranks.size());
  std::vector<flight_recorder_request> fr;
  for (size_t i = 0; i < ranks.size(); ++i) {
    std::string dir = proc_environ_value(ranks[i].pid, env_var::kTrainctlState);
    dir = dir.find('/') == std::string::npos ? o.python_dir : dir.substr(0, dir.rfind('/'));
    py_file[i] = dir + "/stacks." + std::to_string(ranks[i].pid);
    fr.emplace_back(dir, ranks[i].pid);
    if (o.stack_signal == 0 || dir.empty() || !catches(ranks[i].pid, o.stack_signal)) continue;
    if (foreign_at(py_file[i])) {
      refused[i] = py_file[i] + " is not a regular file of this user";
      continue;
    }
    before[i] = std::max<off_t>(0, file_size(py_file[i]));
    if (!pid_handle(ranks[i]).signal(o.stack_signal)) before[i] = -1;
  }
  wait_for_recorders(fr, o.recorder_wait);
  std::vector<rank_stack> out;
  for (size_t i = 0; i < ranks.size(); ++i) {
    rank_stack s;
    s.pid = ranks[i].pid;
    s.rank = proc_rank(s.pid);
    s.host = host;
    s.state = state[i];
    std::string py;
    if (before[i] >= 0) py = python_stacks(py_file[i], before[i], o.python_wait);
    s.python = !py.empty();
    s.native = native[i].find("#0") != std::string::npos;
    std::string main_thread = first_line(py_file[i]);
    main_thread = main_thread.compare(0, 21, "trainctl main thread ") == 0 ? main_thread.substr(21) : "";
    s.frame = innermost_python_frame(py, main_thread);
    s.caller = innermost_python_frame(py, main_thread, true);
    if (s.frame.empty()) s.frame = innermost_native_frame(native[i], s.pid);
    if (s.frame.empty()) s.frame = "(unknown)";
    const std::string recorder = recorder_text(fr[i], s, o);
    const std::string name = "rank" + (s.rank >= 0 ? std::to_string(s.rank) : "-pid" + std::to_string(s.pid)) + ".txt";
    std::ostringstream text;
    text << "=== trainctl stacks: rank " << s.rank << ", pid " << s.pid << ", host " << host << ", " << now_text()
         << ": " << one_line(o.reason) << "\n=== dump: run=" << o.id.run << " kind=" << o.id.kind
         << " at_ms=" << o.id.at_ms << "\n=== innermost: " << s.frame << "\n";
    if (s.state != 0) text << "=== process state: " << s.state << "\n";
    if (!s.caller.empty()) text << "=== program's frame: " << s.caller << "\n";
    for (const auto& line : s.collectives) text << "=== collective: " << line << "\n";
    text << "--- Python, all threads (faulthandler)\n"
         << (!refused[i].empty() ? "(not asked for: " + refused[i] + ")\n"
             : py.empty()        ? "(none: the rank does not use trainctl's Python package, or did not answer)\n"
                                 : py);
    text << "--- native (" << tool[i] << ")\n" << native[i] << "\n" << recorder;
    const std::string nccl = request_flight_recorder(s.pid, s.rank);
    if (!nccl.empty()) text << "--- NCCL flight recorder\n" << nccl;
    const std::string why = append_in_dir(o.dir_fd, name, text.str(), o.file_mode);
    if (why.empty())
      s.file = o.out_dir + "/" + name;
    else
      s.error = why + " in " + o.out_dir;
    out.push_back(s);
  }
  return out;
}

std::vector<rank_stack> read_dumps(int dir_fd, const std::string& run, const std::string& kind, std::int64_t since_ms) {
  std::map<int, rank_stack> newest;
  std::map<int, std::int64_t> newest_at;
  for (const std::string& name : dir_entry_names(dir_fd)) {
    if (name.compare(0, 4, "rank") != 0 || name.size() < 9 || name.compare(name.size() - 4, 4, ".txt") != 0) continue;
    const std::string text = read_own_text(dir_fd, name);
    if (text.empty()) continue;
    std::istringstream in(text);
    std::string line;
    rank_stack s;
    std::int64_t at = -1;
    auto keep = [&] {
      if (at < since_ms || !valid_node_name(s.host)) return;
      if (newest_at.count(s.rank) == 0 || newest_at[s.rank] < at) {
        newest[s.rank] = s;
        newest_at[s.rank] = at;
      }
    };
    while (std::getline(in, line)) {
      if (line.compare(0, 21, "=== trainctl stacks: ") == 0) {
        keep();
        at = -1;
        s = rank_stack{};
        s.file = name;
        std::sscanf(line.c_str(), "=== trainctl stacks: rank %d, pid %d", &s.rank, &s.pid);
        const size_t h = line.find(", host ");
        if (h != std::string::npos) s.host = line.substr(h + 7, line.find(',', h + 7) - h - 7);
      } else if (line.compare(0, 10, "=== dump: ") == 0) {
        char r[256] = {}, k[64] = {};
        long long a = -1;
        // "run=R kind=K at_ms=N"
        if (std::sscanf(line.c_str(), "=== dump: run=%255s kind=%63s at_ms=%lld", r, k, &a) == 3 && run == r &&
            kind == k)
          at = a;
      } else if (line.compare(0, 15, "=== innermost: ") == 0) {
        s.frame = line.substr(15);
      } else if (line.compare(0, 19, "=== process state: ") == 0 && line.size() == 20) {
        s.state = line[19];
      } else if (line.compare(0, 21, "=== program's frame: ") == 0) {
        s.caller = line.substr(21);
      } else if (line.compare(0, 16, "=== collective: ") == 0 && s.collectives.size() < 64) {
        s.collectives.push_back(line.substr(16));
      }
    }
    keep();
  }
  std::vector<rank_stack> out;
  out.reserve(newest.size());
  for (auto& [rank, s] : newest) out.push_back(s);
  return out;
}

int dump_job_stacks_here(const std::string& job_id, std::string log_dir, const std::string& reason) {
  const std::vector<std::string> launchers{"torchrun", "accelerate", "deepspeed", "mpirun", "mpiexec", "srun", "orted"};
  // Only this node's: where nodes share a host (containers, test beds) the others'
  // ranks are visible here too.
  const std::string node = env_text(env_var::kSlurmdNodename);
  std::vector<proc_info> ranks;
  for (const auto& r : find_job_rank_procs(job_id, launchers))
    if (node.empty() || proc_environ_value(r.pid, env_var::kSlurmdNodename) == node) ranks.push_back(r);
  // Unless told where, beside the job's own hang stacks: its ranks' TRAINCTL_LOG_DIR
  // (the template sets it inside the job, where a login shell cannot see it).
  if (log_dir.compare(0, 9, "fallback:") == 0) {
    const std::string logs = ranks.empty() ? "" : proc_environ_value(ranks[0].pid, env_var::kTrainctlLogDir);
    log_dir = logs.empty() ? log_dir.substr(9) : logs;
  }
  // A missing log directory is made (private); one that cannot be used, or an evidence
  // directory of someone else's, is one line and a failure: never a claim of files that
  // were not written.
  bool group = false;
  std::string why = prepare_log_dir(log_dir, &group), note;
  const std::string root = why.empty() ? evidence_root(log_dir, group, &why, &note) : "";
  const std::string out_dir = root + "/stacks-" + job_id;
  const owned_fd fd = why.empty() ? open_stacks_dir(out_dir, group, &why) : owned_fd();
  if (!note.empty()) std::printf("note host=%s %s\n", node_name().c_str(), note.c_str());
  if (!fd) {
    std::printf("error host=%s %s\n", node_name().c_str(), why.c_str());
    std::fflush(stdout);
    return 1;
  }
  dump_options o;
  o.out_dir = out_dir;
  o.dir_fd = fd.get();
  o.file_mode = group ? 0640 : 0600;
  const std::string restart = env_text(env_var::kSlurmRestartCount);
  o.id = {job_id + "." + (restart.empty() ? "0" : restart), "on-demand", unix_now_ms()};
  o.python_dir = state_dir();
  o.stack_signal = stack_signal_from_env();
  o.reason = reason;
  for (const auto& s : dump_stacks(ranks, o)) {
    if (s.file.empty())
      std::printf("error host=%s stacks of rank %d not saved: %s\n", s.host.c_str(), s.rank, s.error.c_str());
    else {
      std::printf("stack rank=%d pid=%d host=%s dir=%s frame=%s\n", s.rank, s.pid, s.host.c_str(), out_dir.c_str(),
                  s.frame.c_str());
      if (!s.caller.empty()) std::printf("caller rank=%d %s\n", s.rank, s.caller.c_str());
      for (const auto& c : s.collectives) std::printf("collective rank=%d %s\n", s.rank, c.c_str());
    }
  }
  std::fflush(stdout);
  return 0;
}

}  // namespace trainctl
