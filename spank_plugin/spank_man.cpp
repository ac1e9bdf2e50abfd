// Makes trainctl_spank(8) at build time: the page's template with its OPTIONS section
// written from the plugin's own option table (plugin_option_docs), so that the page
// never drifts from what srun --help says. Not installed.
//   trainctl_spank_man TEMPLATE OUTPUT
// replaces the line "%PLUGIN_OPTIONS%" with the options and "%PLUGIN_OPTION_COUNT%"
// with their number in words.
#include <csignal>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "spank_args.hpp"

namespace {

// Text as roff reads it: a backslash is \e, a hyphen \- (so that it is copied as one),
// and a line never starts with a control character.
std::string roff(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '\\')
      out += "\\e";
    else if (c == '-')
      out += "\\-";
    else
      out += c;
  }
  if (!out.empty() && (out[0] == '.' || out[0] == '\'')) out.insert(0, "\\&");
  return out;
}

std::string in_words(size_t n) {
  static const char* words[] = {"no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"};
  return n < sizeof words / sizeof *words ? words[n] : std::to_string(n);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: trainctl_spank_man TEMPLATE OUTPUT\n");
    return 2;
  }
  const auto docs = trainctl::plugin_option_docs(SIGUSR1);
  std::ostringstream options;
  for (const auto& d : docs) {
    options << ".TP\n";
    if (d.value_optional)
      options << ".BR \\-\\-" << roff(d.name) << " [=\\fI" << roff(d.value) << "\\fR]\n";
    else
      options << ".BI \\-\\-" << roff(d.name) << "= " << roff(d.value) << "\n";
    options << roff(d.help) << ".\n";
  }
  std::ifstream in(argv[1]);
  if (!in) {
    std::fprintf(stderr, "trainctl_spank_man: cannot read %s\n", argv[1]);
    return 1;
  }
  std::ostringstream page;
  std::string line;
  while (std::getline(in, line)) {
    if (line == "%PLUGIN_OPTIONS%") {
      page << options.str();
      continue;
    }
    const std::string count = "%PLUGIN_OPTION_COUNT%";
    if (const size_t at = line.find(count); at != std::string::npos)
      line.replace(at, count.size(), in_words(docs.size()));
    page << line << "\n";
  }
  std::ofstream out(argv[2]);
  out << page.str();
  out.close();
  if (!out) {
    std::fprintf(stderr, "trainctl_spank_man: cannot write %s\n", argv[2]);
    return 1;
  }
  return 0;
}
