#include "error_fields.hpp"

#include <cstring>

namespace trainctl {

std::string printable_line(const std::string& text, std::size_t max) {
  std::string out = text.substr(0, text.find('\n'));
  if (out.size() > max) out.resize(max);
  for (char& c : out)
    if (c < ' ' || c > '~') c = '?';
  return out;
}

namespace error_fields {

void note(rank_beat& b, const std::string& text) {
  if (noted(b)) return;
  const std::string line = printable_line(text, kMaxError);
  std::memcpy(b.error, line.data(), line.size());
  b.error_len.store(static_cast<std::int32_t>(line.size()), std::memory_order_release);
}

std::string read(const rank_beat& b) {
  const std::int32_t n = b.error_len.load(std::memory_order_acquire);
  if (n <= 0 || n > kMaxError) return "";
  return printable_line(std::string(b.error, static_cast<std::size_t>(n)), kMaxError);
}

bool noted(const rank_beat& b) { return b.error_len.load(std::memory_order_acquire) != 0; }

void clear(rank_beat& b) { b.error_len.store(0, std::memory_order_relaxed); }

}  // namespace error_fields
}  // namespace trainctl
