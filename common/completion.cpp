#include "completion.hpp"

#include <functional>

namespace trainctl {
namespace {

// A node and its place: "" for the program, "status", "bad-nodes list".
using visit_fn = std::function<void(const std::string& path, const completion_node& n)>;
void walk(const completion_node& n, const std::string& path, const visit_fn& f) {
  f(path, n);
  for (const auto& s : n.subs) walk(s, path.empty() ? s.name : path + " " + s.name, f);
}

// `s` inside single quotes: in bash and zsh a quote closes, is escaped and reopens; fish
// takes \' and \\ inside them.
std::string quoted_text(const std::string& s, bool fish = false) {
  std::string out;
  for (char c : s) {
    if (c == '\n') c = ' ';
    if (c == '\'')
      out += fish ? "\\'" : "'\\''";
    else if (c == '\\' && fish)
      out += "\\\\";
    else
      out += c;
  }
  return out;
}

// The shell words that list the values of a kind ("" when the shell's default, files,
// or nothing fits). `verbs`: the program's verbs, for help VERB.
std::string dynamic_words(const std::string& kind, const std::string& verbs) {
  // A TAB must not hang the shell: slurmctld down or unreachable keeps squeue and sinfo
  // retrying for a minute.
  if (kind == "JOB") return "timeout 2 squeue --me --noheader --format=%i 2>/dev/null";
  if (kind == "NODE") return "timeout 2 sinfo --noheader --format=%n 2>/dev/null | sort -u";
  if (kind == "VERB") return "echo " + verbs;
  if (kind == "SHELL") return "echo bash zsh fish";
  return "";
}

std::string verb_names(const completion_node& root) {
  std::string out;
  for (const auto& s : root.subs) out += (out.empty() ? "" : " ") + s.name;
  return out;
}

std::string fn_name(const std::string& prog) {
  std::string out = "_";
  for (char c : prog) out += (c == '-' ? '_' : c);
  return out;
}

// The tables both bash and zsh read, as shell functions over the place ($1):
// _P_subs, _P_opts (each "NAME<TAB>HELP"), _P_kind PLACE OPTION, _P_pos PLACE N.
std::string shell_tables(const std::string& f, const completion_node& root) {
  std::string subs = f + "_subs() {\n  case $1 in\n", opts = f + "_opts() {\n  case $1 in\n",
              kind = f + "_kind() {\n  case \"$1|$2\" in\n", pos = f + "_pos() {\n  case \"$1|$2\" in\n";
  walk(root, "", [&](const std::string& path, const completion_node& n) {
    if (!n.subs.empty()) {
      subs += "    '" + path + "') printf '%s\\t%s\\n'";
      for (const auto& s : n.subs) subs += " '" + s.name + "' '" + quoted_text(s.help) + "'";
      subs += " ;;\n";
    }
    if (!n.options.empty()) {
      opts += "    '" + path + "') printf '%s\\t%s\\n'";
      for (const auto& o : n.options)
        for (const auto& name : o.names) opts += " '" + name + "' '" + quoted_text(o.help) + "'";
      opts += " ;;\n";
    }
    for (const auto& o : n.options)
      if (o.takes_value)
        for (const auto& name : o.names) kind += "    '" + path + "|" + name + "') echo '" + o.kind + "' ;;\n";
    for (std::size_t i = 0; i < n.positionals.size(); ++i)
      pos += "    '" + path + "|" + std::to_string(i) + "') echo '" + n.positionals[i] + "' ;;\n";
  });
  return subs + "  esac\n}\n" + opts + "  esac\n}\n" + kind + "  esac\n}\n" + pos + "  esac\n}\n";
}

// The walk over the words typed before the current one, the same in bash and zsh:
// sets place (the verb and subcommand), kind (what the current word is a value of) and
// rest (1 after "--": a command follows).
std::string word_walk(const std::string& f, const std::string& first, const std::string& last,
                      const std::string& word) {
  return "  local place='' kind='' w i npos=0 rest=0\n"
         "  for ((i = " +
         first + "; i < " + last + "; i++)); do\n    w=" + word +
         "\n"
         "    if [ -n \"$kind\" ]; then kind=''; continue; fi\n"
         "    case $w in\n"
         "      --) rest=1; break ;;\n"
         "      --*=*) ;;\n"
         "      -*) kind=$(" +
         f +
         "_kind \"$place\" \"$w\") ;;\n"
         "      *)\n"
         "        if " +
         f +
         "_subs \"$place\" | cut -f1 | grep -qxF -- \"$w\"; then\n"
         "          place=${place:+$place }$w; npos=0\n"
         "        else\n"
         "          npos=$((npos + 1))\n"
         "        fi ;;\n"
         "    esac\n"
         "  done\n"
         "  [ -n \"$kind\" ] || [ \"$rest\" = 1 ] || kind=$(" +
         f + "_pos \"$place\" \"$npos\")\n";
}

}  // namespace

std::string bash_completion(const std::string& prog, const completion_node& root) {
  const std::string f = fn_name(prog), verbs = verb_names(root);
  std::string out = "# bash completion for " + prog + ", generated from its parsers by `" + prog +
                    " completion bash`.\n# shellcheck shell=bash disable=SC2016\n";
  out += shell_tables(f, root);
  out += f + "() {\n  local cur=${COMP_WORDS[COMP_CWORD]}\n";
  out += word_walk(f, "1", "COMP_CWORD", "${COMP_WORDS[i]}");
  out +=
      "  local words=''\n"
      "  if [ \"$rest\" = 1 ]; then\n"
      "    mapfile -t COMPREPLY < <(compgen -c -- \"$cur\" | sort -u); return\n"
      "  fi\n"
      "  case $kind in\n"
      "    PATH | DIR) mapfile -t COMPREPLY < <(compgen -f -- \"$cur\"); return ;;\n"
      "  esac\n"
      "  if [[ $cur == -* ]]; then  # options: no need to ask SLURM for jobs or nodes\n"
      "    words=$(" +
      f +
      "_opts \"$place\" | cut -f1)\n"
      "    mapfile -t COMPREPLY < <(compgen -W \"$words\" -- \"$cur\"); return\n"
      "  fi\n"
      "  case $kind in\n"
      "    JOB) words=$(" +
      dynamic_words("JOB", verbs) + ") ;;\n    NODE) words=$(" + dynamic_words("NODE", verbs) +
      ") ;;\n    VERB) words='" + verbs + "' ;;\n    SHELL) words=$(" + dynamic_words("SHELL", verbs) +
      ") ;;\n"
      "  esac\n"
      "  if [ -z \"$kind\" ] || [ \"$npos\" = 0 ]; then\n"
      "    words=\"$words $(" +
      f +
      "_subs \"$place\" | cut -f1)\"\n"
      "  fi\n"
      "  mapfile -t COMPREPLY < <(compgen -W \"$words\" -- \"$cur\")\n"
      "}\n";
  out += "complete -o default -F " + f + " " + prog + "\n";
  return out;
}

std::string zsh_completion(const std::string& prog, const completion_node& root) {
  const std::string f = fn_name(prog), verbs = verb_names(root);
  std::string out = "#compdef " + prog + "\n# zsh completion for " + prog + ", generated from its parsers by `" + prog +
                    " completion zsh`.\n";
  out += shell_tables(f, root);
  out += f + "() {\n";
  out += word_walk(f, "2", "CURRENT", "${words[i]}");
  out +=
      "  local -a list\n"
      "  if [ \"$rest\" = 1 ]; then _command_names -e; return; fi\n"
      "  if [[ $PREFIX == -* ]] && [ \"$(" +
      f +
      "_kind \"$place\" \"${words[CURRENT-1]}\")\" = '' ]; then\n"
      "    list=(${(f)\"$(" +
      f +
      "_opts \"$place\" | sed 's/:/\\\\:/g; s/\\t/:/')\"})\n"
      "    _describe -t options option list; return\n"
      "  fi\n"
      "  case $kind in\n"
      "    PATH) _files; return ;;\n"
      "    DIR) _files -/; return ;;\n"
      "    JOB) list=(${(f)\"$(" +
      dynamic_words("JOB", verbs) + ")\"}); compadd -a list; return ;;\n    NODE) list=(${(f)\"$(" +
      dynamic_words("NODE", verbs) + ")\"}); compadd -a list; return ;;\n    VERB) compadd " + verbs +
      "; return ;;\n    SHELL) compadd $(" + dynamic_words("SHELL", verbs) +
      "); return ;;\n"
      "    ?*) return ;;\n"
      "  esac\n"
      "  list=(${(f)\"$(" +
      f +
      "_subs \"$place\" | sed 's/:/\\\\:/g; s/\\t/:/')\"})\n"
      "  (( ${#list} )) && _describe -t commands command list\n"
      "}\n"
      "if [ \"$funcstack[1]\" = " +
      f + " ]; then " + f + " \"$@\"; else compdef " + f + " " + prog + "; fi\n";
  return out;
}

std::string fish_completion(const std::string& prog, const completion_node& root) {
  const std::string verbs = verb_names(root);
  std::string out = "# fish completion for " + prog + ", generated from its parsers by `" + prog +
                    " completion fish`.\ncomplete -c " + prog + " -f\n";
  walk(root, "", [&](const std::string& path, const completion_node& n) {
    // Where this node's words apply: its verb (and subcommand) typed, none of its own
    // subcommands yet.
    std::string cond = path.empty() ? "__fish_use_subcommand" : "";
    std::string last;
    for (std::size_t at = 0; !path.empty() && at != std::string::npos;) {
      const std::size_t sp = path.find(' ', at);
      last = path.substr(at, sp == std::string::npos ? sp : sp - at);
      cond += (cond.empty() ? "" : "; and ") + std::string("__fish_seen_subcommand_from ") + last;
      at = sp == std::string::npos ? sp : sp + 1;
    }
    if (!path.empty() && !n.subs.empty()) {
      std::string names;
      for (const auto& s : n.subs) names += " " + s.name;
      cond += "; and not __fish_seen_subcommand_from" + names;
    }
    for (const auto& s : n.subs)
      out += "complete -c " + prog + " -n '" + cond + "' -a '" + s.name + "' -d '" + quoted_text(s.help, true) + "'\n";
    for (const auto& o : n.options) {
      out += "complete -c " + prog + " -n '" + cond + "'";
      for (const auto& name : o.names) out += (name.size() > 2 ? " -l " + name.substr(2) : " -s " + name.substr(1));
      if (o.takes_value) {
        out += " -r";
        const std::string words = dynamic_words(o.kind, verbs);
        if (o.kind == "PATH" || o.kind == "DIR")
          out += " -F";
        else if (!words.empty())
          out += " -a '(" + words + ")'";
      }
      out += " -d '" + quoted_text(o.help, true) + "'\n";
    }
    if (!n.positionals.empty()) {
      const std::string words = dynamic_words(n.positionals.front(), verbs);
      if (!words.empty()) out += "complete -c " + prog + " -n '" + cond + "' -a '(" + words + ")'\n";
      if (n.positionals.front() == "command")
        out += "complete -c " + prog + " -n '" + cond + "' -a '(__fish_complete_command)'\n";
    }
  });
  return out;
}

}  // namespace trainctl
