#include "shell_words.hpp"

#include <algorithm>
#include <utility>

namespace trainctl {
namespace {

// A here-document's body, from the newline at t[i] to its terminator's line (`end`, tabs
// before it allowed): i moves to that line's end, `line` counts the lines skipped.
void skip_heredoc(const std::string& t, size_t& i, int& line, const std::string& end) {
  while (i + 1 < t.size()) {
    const size_t eol = t.find('\n', i + 1);
    const std::string l = t.substr(i + 1, (eol == std::string::npos ? t.size() : eol) - i - 1);
    i = eol == std::string::npos ? t.size() : eol;
    ++line;
    const size_t a = l.find_first_not_of('\t');
    if (a != std::string::npos && l.substr(a) == end) break;
  }
}

// The closing quote of the quoted text that starts at t[i] (t.size() when none), a $(...)
// or ${...} inside double quotes skipped whole; `line` counts the newlines passed.
size_t quote_end(const std::string& t, size_t i, int& line) {
  const char q = t[i];
  size_t j = i + 1;
  while (j < t.size() && t[j] != q) {
    if (q == '"' && t[j] == '\\') ++j;
    if (q == '"' && t[j] == '$') {
      const size_t past = skip_dollar(t, j);
      line += static_cast<int>(std::count(t.begin() + j, t.begin() + std::min(past, t.size()), '\n'));
      j = past;
      continue;
    }
    if (j < t.size() && t[j] == '\n') ++line;
    ++j;
  }
  return j;
}

}  // namespace

// Steps over a $(...), $((...)) or ${...} that starts at text[i] ('$'), returning the
// index just past it.
size_t skip_dollar(const std::string& t, size_t i) {
  if (i + 1 >= t.size()) return i + 1;
  const char open = t[i + 1];
  if (open != '(' && open != '{') return i + 1;
  const char close = open == '(' ? ')' : '}';
  int depth = 0;
  for (size_t j = i + 1; j < t.size(); ++j) {
    if (t[j] == '\\') {
      ++j;
    } else if (t[j] == '\'' && open == '(') {
      const size_t end = t.find('\'', j + 1);
      j = end == std::string::npos ? t.size() : end;
    } else if (t[j] == open) {
      ++depth;
    } else if (t[j] == close && --depth == 0) {
      return j + 1;
    }
  }
  return t.size();
}

// The script's commands, split as the shell would: words (quotes kept), ended by a
// newline outside parentheses, ';', '&', '|', '(' or ')'. Comments and here-documents
// are dropped.
std::vector<command> commands_of(const std::string& t) {
  std::vector<command> out(1);
  int line = 1, depth = 0;
  std::string heredoc;  // the terminator of a here-document that starts on the next line
  std::string word;
  int word_line = 0;
  auto end_word = [&] {
    if (!word.empty()) {
      if (word.rfind("<<", 0) == 0 && word.size() > 2) {
        std::string end = word.substr(word[2] == '-' ? 3 : 2);
        end.erase(std::remove_if(end.begin(), end.end(), [](char c) { return c == '\'' || c == '"'; }), end.end());
        heredoc = end;
      }
      out.back().push_back({word, word_line});
    }
    word.clear();
  };
  auto end_command = [&] {
    end_word();
    if (!out.back().empty()) out.emplace_back();
  };
  for (size_t i = 0; i < t.size(); ++i) {
    const char c = t[i];
    if (word.empty()) word_line = line;
    if (c == '\n') {
      ++line;
      if (depth > 0) {
        end_word();
      } else {
        end_command();
      }
      if (!heredoc.empty()) skip_heredoc(t, i, line, std::exchange(heredoc, std::string()));
    } else if (c == '\\' && i + 1 < t.size()) {
      if (t[i + 1] == '\n') {
        ++line;
        ++i;
        end_word();
      } else {
        word += t.substr(i, 2);
        ++i;
      }
    } else if (c == '\'' || c == '"') {
      const size_t j = quote_end(t, i, line);
      word += t.substr(i, std::min(j, t.size() - 1) - i + 1);
      i = j;
    } else if (c == '$') {
      const size_t past = skip_dollar(t, i);
      line += static_cast<int>(std::count(t.begin() + i, t.begin() + std::min(past, t.size()), '\n'));
      word += t.substr(i, past - i);
      i = past - 1;
    } else if (c == '#' && word.empty()) {
      while (i + 1 < t.size() && t[i + 1] != '\n') ++i;
    } else if (c == ' ' || c == '\t') {
      end_word();
    } else if (c == ';' || c == '&' || c == '|') {
      end_command();
    } else if (c == '(' || c == ')') {
      if (c == '(' && !word.empty() && word.back() == '=') {  // NAME=( ... ): an array
        word += '(';
        end_word();
        ++depth;
        continue;
      }
      end_command();
      depth = std::max(0, depth + (c == '(' ? 1 : -1));
    } else {
      word += c;
    }
  }
  end_command();
  out.pop_back();
  return out;
}

}  // namespace trainctl
