// A batch script's commands as the shell splits them, for lint and the drill to read:
// words as written (quotes kept) with their lines, commands ended by a newline outside
// parentheses, ';', '&', '|', '(' or ')'. A reader by text, not a shell: comments and
// here-documents are dropped, $(...) and ${...} kept whole.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace trainctl {

struct raw_word {
  std::string raw;  // as written, quotes and all
  int line = 0;
};
using command = std::vector<raw_word>;

std::vector<command> commands_of(const std::string& text);
// Steps over a $(...), $((...)) or ${...} that starts at text[i] ('$'): the index just past it.
std::size_t skip_dollar(const std::string& text, std::size_t i);

}  // namespace trainctl
