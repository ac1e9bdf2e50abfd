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
  const sink_pair* older;
};
// The sink in use (null: stderr), replaced whole. A replaced one is never freed (a
// thread that loaded it may still call it), and stays linked from g_made, so it is
// memory in use, not a leak.
std::atomic<const sink_pair*> g_sink{nullptr};
std::atomic<const sink_pair*> g_made{nullptr};

}  // namespace

void set_log_sink(log_sink sink, void* user) {
  if (sink == nullptr) {
    g_sink.store(nullptr, std::memory_order_release);
    return;
  }
  auto* made = new sink_pair{sink, user, g_made.load(std::memory_order_acquire)};
  while (!g_made.compare_exchange_weak(made->older, made, std::memory_order_acq_rel)) {
  }
  g_sink.store(made, std::memory_order_release);
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
