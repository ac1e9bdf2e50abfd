#include "history.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "alert_state.hpp"
#include "owned_fd.hpp"

namespace trainctl {

namespace {

// The file: this magic, then up to kMaxPoints records of two native int64 (unix seconds,
// value), oldest first. Fixed-size records read in one read(): a run's cost is the same
// on the first day and the hundredth (the text format before parsed and printed every
// point on every run, 48 K instructions a point). Files of the old text format ("T V"
// lines) are read once and written anew in this one.
constexpr char kMagic[8] = {'T', 'W', 'H', 'I', 'S', 'T', '2', '\n'};
constexpr std::size_t kMaxPoints = 500;
constexpr double kKeepSeconds = 86400;
struct record {
  std::int64_t t;
  std::int64_t v;
};

// The whole file, at most the size a full history has (a bigger one is not ours to
// parse); "" when it is missing or unreadable. The state directory is this user's own,
// but a link or a FIFO there is still not followed or waited on.
std::string read_small_file(const std::string& file, std::size_t limit) {
  const owned_fd fd(open(file.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!fd) return "";
  std::string data(limit, '\0');
  std::size_t got = 0;
  while (got < limit) {
    const ssize_t n = read(fd.get(), &data[got], limit - got);
    if (n <= 0) break;
    got += static_cast<std::size_t>(n);
  }
  data.resize(got);
  return data;
}

std::vector<record> parse_records(const std::string& data) {
  std::vector<record> out;
  if (data.size() >= sizeof kMagic && std::memcmp(data.data(), kMagic, sizeof kMagic) == 0) {
    const std::size_t n = (data.size() - sizeof kMagic) / sizeof(record);
    out.resize(n);
    if (n > 0) std::memcpy(out.data(), data.data() + sizeof kMagic, n * sizeof(record));
    return out;
  }
  // The old text format: "T V" per line.
  const char* p = data.c_str();
  for (;;) {
    char* end = nullptr;
    const long long t = std::strtoll(p, &end, 10);
    if (end == p) break;
    p = end;
    const long long v = std::strtoll(p, &end, 10);
    if (end == p) break;
    p = end;
    out.push_back({t, v});
  }
  return out;
}

}  // namespace

std::string history_file(const std::string& state_dir, const std::string& check, const std::string& target) {
  std::string key;
  for (char c : target) key += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return state_dir + "/" + check + "-history-" + key;
}

std::vector<std::pair<double, double>> record_history(const std::string& file, double now, double value) {
  // A legacy text file of 500 points is about 20 KB; a binary one 8 KB.
  std::vector<record> kept;
  kept.reserve(kMaxPoints + 1);
  for (const record& r : parse_records(read_small_file(file, std::size_t{64} * 1024))) {
    const double t = static_cast<double>(r.t);
    if (now - t < kKeepSeconds && now >= t) kept.push_back(r);
  }
  kept.push_back({static_cast<std::int64_t>(now), static_cast<std::int64_t>(value)});
  if (kept.size() > kMaxPoints) kept.erase(kept.begin(), kept.end() - kMaxPoints);
  std::string out(sizeof kMagic + kept.size() * sizeof(record), '\0');
  std::memcpy(&out[0], kMagic, sizeof kMagic);
  std::memcpy(&out[sizeof kMagic], kept.data(), kept.size() * sizeof(record));
  try {
    write_atomically(file, out);
  } catch (const std::exception&) {
    // No history this time: a trend is an extra, not the check.
  }
  std::vector<std::pair<double, double>> pts;
  pts.reserve(kept.size());
  for (const record& r : kept) pts.emplace_back(static_cast<double>(r.t), static_cast<double>(r.v));
  return pts;
}

}  // namespace trainctl
