#include "process_group_timeout.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <regex>
#include <vector>

namespace trainctl {
namespace {

// The text from the '(' at `open` to its ')', quotes stepped over; "" when it never closes
// within the call's first 4 KiB (not a call lint can read).
std::string call_arguments(const std::string& text, std::size_t open) {
  int depth = 0;
  char quote = 0;
  const std::size_t end = std::min(text.size(), open + 4096);
  for (std::size_t i = open; i < end; ++i) {
    const char c = text[i];
    if (quote != 0) {
      if (c == '\\')
        ++i;
      else if (c == quote)
        quote = 0;
      continue;
    }
    if (c == '\'' || c == '"')
      quote = c;
    else if (c == '(')
      ++depth;
    else if (c == ')' && --depth == 0)
      return text.substr(open + 1, i - open - 1);
  }
  return "";
}

bool in_comment(const std::string& text, std::size_t at) {
  const std::size_t line_start = text.rfind('\n', at) == std::string::npos ? 0 : text.rfind('\n', at) + 1;
  return text.find('#', line_start) < at;
}

// timedelta's keywords and their milliseconds.
std::int64_t unit_ms(const std::string& name) {
  if (name == "weeks") return 7LL * 24 * 3600 * 1000;
  if (name == "days") return 24LL * 3600 * 1000;
  if (name == "hours") return 3600LL * 1000;
  if (name == "minutes") return 60LL * 1000;
  if (name == "seconds") return 1000;
  if (name == "milliseconds") return 1;
  return 0;
}

// `timedelta(...)`'s arguments as milliseconds: only keywords with plain numbers; -1 else.
std::int64_t timedelta_ms(const std::string& args) {
  static const std::regex kArg(R"(^\s*([a-z]+)\s*=\s*([0-9]+(?:\.[0-9]*)?)\s*$)");
  double ms = 0;
  std::size_t from = 0;
  bool any = false;
  while (from <= args.size()) {
    const std::size_t comma = std::min(args.find(',', from), args.size());
    const std::string arg = args.substr(from, comma - from);
    from = comma + 1;
    if (arg.find_first_not_of(" \t\r\n") == std::string::npos) continue;  // a trailing comma
    std::smatch m;
    if (!std::regex_match(arg, m, kArg) || unit_ms(m[1]) == 0) return -1;
    ms += std::strtod(m[2].str().c_str(), nullptr) * static_cast<double>(unit_ms(m[1]));
    any = true;
  }
  return any && ms > 0 && ms < 1e15 ? static_cast<std::int64_t>(ms) : -1;
}

// The timeout= keyword's value in one call's arguments; nullopt when it has none.
std::optional<std::int64_t> timeout_of_call(const std::string& args) {
  static const std::regex kTimeout(R"((?:^|[,\s(])timeout\s*=\s*)");
  std::smatch m;
  if (!std::regex_search(args, m, kTimeout)) return std::nullopt;
  const std::size_t value = static_cast<std::size_t>(m.position(0) + m.length(0));
  static const std::regex kTimedelta(R"(^(?:datetime\s*\.\s*)?timedelta\s*\()");
  const std::string rest = args.substr(value);
  std::smatch t;
  if (!std::regex_search(rest, t, kTimedelta)) return -1;
  const std::string inner = call_arguments(rest, static_cast<std::size_t>(t.length(0)) - 1);
  // The timedelta must be the whole value: `timedelta(minutes=5) * 2` is an expression.
  const std::size_t after = static_cast<std::size_t>(t.length(0)) + inner.size() + 1;
  const std::size_t next = rest.find_first_not_of(" \t\r\n", after);
  if (next != std::string::npos && rest[next] != ',') return -1;
  return timedelta_ms(inner);
}

}  // namespace

std::optional<program_timeout> process_group_timeout(const std::string& python_text) {
  static const std::string kCall = "init_process_group";
  std::optional<program_timeout> best;
  for (std::size_t at = python_text.find(kCall); at != std::string::npos;
       at = python_text.find(kCall, at + kCall.size())) {
    if (at > 0 && (std::isalnum(static_cast<unsigned char>(python_text[at - 1])) || python_text[at - 1] == '_'))
      continue;  // another name that ends so
    std::size_t open = at + kCall.size();
    while (open < python_text.size() && (python_text[open] == ' ' || python_text[open] == '\t')) ++open;
    if (open >= python_text.size() || python_text[open] != '(' || in_comment(python_text, at)) continue;
    const std::optional<std::int64_t> ms = timeout_of_call(call_arguments(python_text, open));
    if (!ms) continue;
    const program_timeout found{static_cast<int>(std::count(python_text.begin(), python_text.begin() + at, '\n')) + 1,
                                *ms};
    if (!best || (best->ms < 0 && found.ms >= 0) || (found.ms >= 0 && found.ms < best->ms)) best = found;
  }
  return best;
}

void read_program_timeouts(const batch_script& s, const std::string& submit_dir, lint_context* ctx) {
  for (const auto& [line, written] : s.programs) {
    const std::string path = written[0] == '/' ? written : submit_dir + "/" + written;
    std::string why;
    const std::string text = read_script_file(path, &why);
    const std::optional<program_timeout> t = text.empty() ? std::nullopt : process_group_timeout(text);
    if (!t) continue;
    const std::string at = written + ":" + std::to_string(t->line);
    if (t->ms < 0) {
      if (ctx->collective_timeout_unread.empty()) ctx->collective_timeout_unread = at;
    } else if (ctx->collective_timeout_from.empty() || t->ms < ctx->collective_timeout_ms) {
      ctx->collective_timeout_ms = t->ms;
      ctx->collective_timeout_from = at;
    }
  }
}

}  // namespace trainctl
