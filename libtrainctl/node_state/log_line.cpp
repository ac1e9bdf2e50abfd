#include "log_line.hpp"

#include <atomic>
#include <cstdio>
#include <cstring>
#include <string>

namespace trainctl {
namespace {

struct sink_pair {
  log_sink fn;
  void* user;
};
// Replaced whole and never freed: a thread that loaded the old one may still call it.
std::atomic<const sink_pair*> g_sink{nullptr};

}  // namespace

void set_log_sink(log_sink sink, void* user) {
  g_sink.store(sink != nullptr ? new sink_pair{sink, user} : nullptr, std::memory_order_release);
}

void log_line(int level, const char* fmt, ...) {
  char buf[2048];
  va_list ap;
  va_start(ap, fmt);
  const int n = std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  const sink_pair* s = g_sink.load(std::memory_order_acquire);
  if (s == nullptr) {
    std::fputs(buf, stderr);
    return;
  }
  std::string line(buf);
  if (line.compare(0, 10, "trainctl: ") == 0) line.erase(0, 10);
  while (!line.empty() && line.back() == '\n') line.pop_back();
  s->fn(level, line.c_str(), s->user);
}

}  // namespace trainctl
