// trainctl completion bash|zsh|fish: the completion script, made from the verbs' own
// parsers (each verb describes its parser instead of parsing, through g_describe), as
// kubectl and gh make theirs. The build installs the three; without root:
//   source <(trainctl completion bash)     # in ~/.bashrc
#include <CLI/CLI.hpp>

#include <cstdio>
#include <string>

#include "completion.hpp"
#include "verb_args.hpp"
#include "verbs.hpp"

namespace trainctl::cli {
namespace {

// Every verb's parser, and `help VERB`.
completion_node describe_trainctl() {
  completion_node root;
  root.name = "trainctl";
  root.options = {{{"--help", "-h"}, false, "", "print the verbs"}, {{"--version"}, false, "", "print the version"}};
  for (const verb_entry& v : verb_table()) {
    completion_node n;
    if (std::string(v.name) == "version") {  // no options but --help
      n.name = v.name;
      n.options = {{{"--help", "-h"}, false, "", "what it does"}};
    } else {
      completion_node* outer = g_describe;
      g_describe = &n;
      char name[64];
      std::snprintf(name, sizeof name, "%s", v.name);
      char* args[] = {name, nullptr};
      v.run(1, args);
      g_describe = outer;
      n.name = v.name;
    }
    n.help = v.summary;
    root.subs.push_back(n);
  }
  completion_node help;
  help.name = "help";
  help.help = "tell one verb";
  help.positionals = {"VERB"};
  root.subs.push_back(help);
  return root;
}

}  // namespace

int verb_completion(int argc, char** argv) {
  CLI::App app{
      "Prints the completion script for SHELL, made from trainctl's own parsers, so it knows every verb and "
      "option of this version. Installed by the packages; without root, add to ~/.bashrc: source <(trainctl "
      "completion bash); ~/.zshrc: source <(trainctl completion zsh); fish: trainctl completion fish > "
      "~/.config/fish/completions/trainctl.fish",
      "trainctl completion"};
  std::string shell;
  app.add_option("SHELL", shell, "bash, zsh or fish")->required()->check(CLI::IsMember({"bash", "zsh", "fish"}));
  if (const auto done = parse_verb(app, argc, argv, "completion")) return *done;
  const completion_node root = describe_trainctl();
  const std::string script = shell == "bash"  ? bash_completion("trainctl", root)
                             : shell == "zsh" ? zsh_completion("trainctl", root)
                                              : fish_completion("trainctl", root);
  std::fputs(script.c_str(), stdout);
  return 0;
}

}  // namespace trainctl::cli
