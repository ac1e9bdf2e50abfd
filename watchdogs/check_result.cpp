#include "check_result.hpp"

#include <unistd.h>

#include <cctype>
#include <cstdio>

namespace trainctl {

const char* status_name(int s) {
  switch (s) {
    case kOk:
      return "OK";
    case kWarning:
      return "WARNING";
    case kCritical:
      return "CRITICAL";
    default:
      return "UNKNOWN";
  }
}

int parse_status(const std::string& name) {
  std::string upper = name;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (int s : {kOk, kWarning, kCritical, kUnknown})
    if (upper == status_name(s)) return s;
  return -1;
}

int worst_status(const std::vector<check_result>& results) {
  // CRITICAL > UNKNOWN > WARNING > OK
  auto rank = [](int s) { return s == kCritical ? 3 : s == kUnknown ? 2 : s == kWarning ? 1 : 0; };
  int worst = kOk;
  for (const auto& r : results)
    if (rank(r.status) > rank(worst)) worst = r.status;
  return worst;
}

std::string host_name() {
  char host[256] = "localhost";
  if (gethostname(host, sizeof host - 1) != 0) return "localhost";
  host[sizeof host - 1] = '\0';
  return host;
}

}  // namespace trainctl

namespace trainctl {

std::string json_safe(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  for (size_t i = 0; i < n;) {
    const unsigned char c = s[i];
    size_t len = 0;
    unsigned char lo = 0x80, hi = 0xBF;  // the allowed range of the second byte
    if (c < 0x80) {
      len = 1;
    } else if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      if (c == 0xE0) lo = 0xA0;  // no overlong forms
      if (c == 0xED) hi = 0x9F;  // no UTF-16 surrogates
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;  // nothing above U+10FFFF
    }
    bool valid = len > 0 && i + len <= n;
    for (size_t k = 1; valid && k < len; ++k) {
      const unsigned char b = s[i + k];
      valid = k == 1 ? b >= lo && b <= hi : b >= 0x80 && b <= 0xBF;
    }
    if (valid) {
      out.append(text, i, len);
      i += len;
    } else {
      char esc[5];
      std::snprintf(esc, sizeof esc, "\\x%02X", c);
      out += esc;
      ++i;
    }
  }
  return out;
}

}  // namespace trainctl
