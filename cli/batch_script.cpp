#include "batch_script.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <functional>
#include <set>

#include "did_you_mean.hpp"
#include "owned_fd.hpp"
#include "parse.hpp"
#include "run_option_table.hpp"
#include "shell_words.hpp"

namespace trainctl {
namespace {

// sbatch's short options that lint reads or must step over, as their long names.
const std::map<char, const char*> kShort = {
    {'J', "--job-name"},   {'t', "--time"},          {'p', "--partition"}, {'a', "--array"},
    {'o', "--output"},     {'e', "--error"},         {'N', "--nodes"},     {'n', "--ntasks"},
    {'G', "--gpus"},       {'c', "--cpus-per-task"}, {'A', "--account"},   {'q', "--qos"},
    {'D', "--chdir"},      {'w', "--nodelist"},      {'x', "--exclude"},   {'d', "--dependency"},
    {'C', "--constraint"}, {'i', "--input"},         {'L', "--licenses"},  {'M', "--clusters"},
    {'b', "--begin"},      {'F', "--nodefile"},      {'S', "--core-spec"}, {'m', "--distribution"}};
// sbatch's short options that take no value.
const std::string kShortFlags = "hHIkOsvQVW";
// sbatch's long options that take no value (a word after them is not theirs).
const std::set<std::string> kFlags = {
    "--requeue",       "--no-requeue", "--hold",  "--wait",       "--parsable",   "--overcommit",    "--spread-job",
    "--test-only",     "--verbose",    "--quiet", "--contiguous", "--ignore-pbs", "--oversubscribe", "--reboot",
    "--use-min-nodes", "--help",       "--usage", "--batch",      "--no-shield",  "--exclusive",     "--no-kill"};

// sbatch's input environment variables that lint reads, and their options ('!': a flag).
const std::pair<const char*, const char*> kInputVariables[] = {{"SBATCH_TIMELIMIT", "--time"},
                                                               {"SBATCH_PARTITION", "--partition"},
                                                               {"SBATCH_JOB_NAME", "--job-name"},
                                                               {"SBATCH_ARRAY_INX", "--array"},
                                                               {"SBATCH_SIGNAL", "--signal"},
                                                               {"SBATCH_REQUEUE", "!--requeue"},
                                                               {"SBATCH_NO_REQUEUE", "!--no-requeue"},
                                                               {"SBATCH_GPUS", "--gpus"},
                                                               {"SBATCH_GPUS_PER_NODE", "--gpus-per-node"}};

// A plugin option that may be given bare (a switch): its value only after '='.
bool value_optional(const std::string& name) {
  for (const run_option& r : run_option_table())
    if (name == r.name) return r.value_optional() || r.metavar == nullptr;
  return kFlags.count(name) != 0;
}

// -- expansion --------------------------------------------------------------------------

struct expanded {
  std::string text;
  bool known = true;
};

using lookup_fn = std::function<std::optional<std::string>(const std::string& name, int line, int depth)>;

bool is_name(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

expanded expand(const std::string& raw, int line, const lookup_fn& lookup, int depth);

// ${...}'s inside (NAME, NAME:-WORD, NAME-WORD, NAME:=WORD).
void expand_braces(const std::string& inside, int line, const lookup_fn& lookup, int depth, expanded* out) {
  size_t n = 0;
  while (n < inside.size() && (std::isalnum(static_cast<unsigned char>(inside[n])) || inside[n] == '_')) ++n;
  const std::string name = inside.substr(0, n);
  if (!is_name(name)) {
    out->known = false;
    return;
  }
  const std::optional<std::string> value = lookup(name, line, depth);
  if (n == inside.size()) {
    if (value) out->text += *value;
    out->known = out->known && value.has_value();
    return;
  }
  const std::string op = inside.substr(n, inside[n] == ':' ? 2 : 1);
  if (op != ":-" && op != "-" && op != ":=" && op != "=") {
    out->known = false;
    return;
  }
  const bool use_default = !value || (op[0] == ':' && value->empty());
  if (!use_default) {
    out->text += *value;
    return;
  }
  const expanded d = expand(inside.substr(n + op.size()), line, lookup, depth + 1);
  out->text += d.text;
  out->known = out->known && d.known;
}

expanded expand(const std::string& raw, int line, const lookup_fn& lookup, int depth) {
  expanded out;
  if (depth > 8) return {"", false};
  bool in_double = false;
  for (size_t i = 0; i < raw.size(); ++i) {
    const char c = raw[i];
    if (c == '\'' && !in_double) {
      const size_t end = raw.find('\'', i + 1);
      out.text += raw.substr(i + 1, (end == std::string::npos ? raw.size() : end) - i - 1);
      i = end == std::string::npos ? raw.size() : end;
    } else if (c == '"') {
      in_double = !in_double;
    } else if (c == '\\' && i + 1 < raw.size()) {
      out.text += raw[++i];
    } else if (c == '`') {
      out.known = false;
      const size_t end = raw.find('`', i + 1);
      i = end == std::string::npos ? raw.size() : end;
    } else if (c == '$' && i + 1 < raw.size()) {
      if (raw[i + 1] == '{') {
        const size_t past = skip_dollar(raw, i);
        expand_braces(raw.substr(i + 2, past - i - 3), line, lookup, depth, &out);
        i = past - 1;
      } else if (raw[i + 1] == '(') {
        out.known = false;
        i = skip_dollar(raw, i) - 1;
      } else {
        size_t n = i + 1;
        while (n < raw.size() && (std::isalnum(static_cast<unsigned char>(raw[n])) || raw[n] == '_')) ++n;
        const std::string name = raw.substr(i + 1, n - i - 1);
        if (!is_name(name)) {
          out.known = false;  // $1, $@, $$, ...
          i = std::max(n, i + 2) - 1;
          continue;
        }
        const std::optional<std::string> value = lookup(name, line, depth);
        if (value) out.text += *value;
        out.known = out.known && value.has_value();
        i = n - 1;
      }
    } else {
      out.text += c;
    }
  }
  return out;
}

// An option word's name and value ("--x=1" -> "--x", "1").
script_option split_option(const std::string& word, int line) {
  script_option o;
  o.line = line;
  const size_t eq = word.find('=');
  o.name = word.substr(0, eq);
  if (eq != std::string::npos) {
    o.value = word.substr(eq + 1);
    o.has_value = true;
  }
  return o;
}

bool is_trainctl_run(const std::vector<std::string>& words, size_t i) {
  const std::string& w = words[i];
  // `command -v trainctl-run`, `which trainctl-run`: a question, not a run.
  if (i > 0 && (words[i - 1] == "-v" || words[i - 1] == "-V")) return false;
  if (words[0] == "which" || words[0] == "type" || words[0] == "hash") return false;
  const std::string base = w.substr(w.rfind('/') == std::string::npos ? 0 : w.rfind('/') + 1);
  if (base == "trainctl-run") return true;
  return base == "trainctl" && i + 1 < words.size() && words[i + 1] == "run";
}

bool names_checkpoints(const std::string& raw) {
  std::string lower(raw);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  // Hugging Face's Trainer saves its checkpoints into --output_dir and resumes from there.
  return lower.find("ckpt") != std::string::npos || lower.find("checkpoint") != std::string::npos ||
         lower.find("output_dir") != std::string::npos || lower.find("output-dir") != std::string::npos;
}

}  // namespace

// The path the user named, followed as sbatch follows it: it is their input, not a file
// found in a shared directory.
std::string read_script_file(const std::string& path, std::string* why) {
  const owned_fd fd(open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
  if (!fd) {
    *why = "cannot read " + path + ": " + std::strerror(errno);
    return "";
  }
  struct stat st {};
  if (fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    *why = path + " is not a regular file; accepted: a batch script, as sbatch takes";
    return "";
  }
  if (st.st_size > static_cast<off_t>((1 << 20))) {
    *why = path + " is larger than 1 MiB: not a batch script";
    return "";
  }
  std::string text(static_cast<std::size_t>(st.st_size), '\0');
  const ssize_t got = pread(fd.get(), text.data(), text.size(), 0);
  if (got < 0) {
    *why = "cannot read " + path + ": " + std::strerror(errno);
    return "";
  }
  text.resize(static_cast<std::size_t>(got));
  if (text.empty()) *why = path + " is empty: not a batch script";
  return text;
}

const script_option* batch_script::last(const std::string& name) const {
  for (auto it = sbatch.rbegin(); it != sbatch.rend(); ++it)
    if (it->name == name) return &*it;
  return nullptr;
}

std::vector<std::string> option_words(const std::string& text) {
  std::vector<std::string> words;
  std::string word;
  bool any = false;
  char quote = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quote != 0) {
      if (c == quote)
        quote = 0;
      else
        word += c;
    } else if (c == '\'' || c == '"') {
      quote = c;
      any = true;
    } else if (c == ' ' || c == '\t' || c == '\r') {
      if (any || !word.empty()) words.push_back(word);
      word.clear();
      any = false;
    } else if (c == '#' && word.empty() && !any) {
      break;
    } else {
      word += c;
    }
  }
  if (any || !word.empty()) words.push_back(word);
  return words;
}

std::string parse_sbatch_args(const std::vector<std::string>& args, int line, std::vector<script_option>* out) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.rfind("--", 0) == 0 && a.size() > 2) {
      script_option o = split_option(a, line);
      if (!o.has_value && !value_optional(o.name) && i + 1 < args.size() && args[i + 1].rfind('-', 0) != 0) {
        o.value = args[++i];
        o.has_value = true;
      }
      out->push_back(o);
    } else if (a.size() >= 2 && a[0] == '-' && a[1] != '-') {
      if (kShortFlags.find(a[1]) != std::string::npos) continue;
      const auto it = kShort.find(a[1]);
      if (it == kShort.end()) return "'" + a.substr(0, 40) + "' is not an sbatch option trainctl knows";
      script_option o{it->second, a.substr(2), true, true, line};
      if (a.size() == 2) {
        if (i + 1 >= args.size()) return "'" + a + "' needs a value";
        o.value = args[++i];
      }
      out->push_back(o);
    } else {
      return "'" + a.substr(0, 40) + "' is not an option; accepted: sbatch options such as --time=1:00:00 -p gpu";
    }
  }
  return "";
}

std::string job_name_of(const batch_script& s, const std::string& file_name) {
  const script_option* name = s.last("--job-name");
  if (name != nullptr && name->has_value && !name->value.empty()) return name->value;
  return file_name.substr(file_name.rfind('/') == std::string::npos ? 0 : file_name.rfind('/') + 1);
}

namespace {

// #SBATCH lines: from the second line to the first line of code, as sbatch reads them;
// what is wrong with one, or "".
std::string read_sbatch_lines(const std::string& text, batch_script& s) {
  size_t at = text.find('\n');
  int line = 1;
  while (at != std::string::npos && at + 1 < text.size()) {
    const size_t eol = text.find('\n', at + 1);
    const std::string l = text.substr(at + 1, (eol == std::string::npos ? text.size() : eol) - at - 1);
    ++line;
    at = eol;
    const size_t a = l.find_first_not_of(" \t\r");
    if (a == std::string::npos) continue;
    if (l[a] != '#') break;
    if (l.compare(a, 7, "#SBATCH") != 0) continue;
    const std::string err = parse_sbatch_args(option_words(l.substr(a + 7)), line, &s.sbatch);
    if (!err.empty()) return "line " + std::to_string(line) + ": #SBATCH " + err;
  }
  return "";
}

// A command's words that name checkpoints: their lines, whether one differs per array
// task, and the paths they give (expanded where the script says how).
void note_checkpoint_words(const command& c, const lookup_fn& lookup, batch_script& s) {
  for (size_t k = 0; k < c.size(); ++k) {
    const raw_word& w = c[k];
    if (!names_checkpoints(w.raw)) continue;
    if (std::find(s.checkpoint_lines.begin(), s.checkpoint_lines.end(), w.line) == s.checkpoint_lines.end())
      s.checkpoint_lines.push_back(w.line);
    if (w.raw.find("SLURM_ARRAY_TASK_ID") != std::string::npos || w.raw.find("%a") != std::string::npos)
      s.checkpoint_per_task = true;
    // --ckpt-dir=PATH, CKPT_DIR=PATH; --ckpt-dir PATH; $CKPT_DIR/x or /scratch/ckpt alone.
    const size_t eq = w.raw.find('=');
    const bool option = w.raw.rfind('-', 0) == 0;
    if (c[0].raw == "echo" || c[0].raw == "printf" || w.raw.find_first_of(" \t") != std::string::npos ||
        (eq != std::string::npos && !option && !is_name(w.raw.substr(0, eq))))
      continue;  // a message, not a path
    std::string value = eq != std::string::npos ? w.raw.substr(eq + 1)
                        : option                ? (k + 1 < c.size() ? c[k + 1].raw : "")
                                                : w.raw;
    if (value.empty() || (!option && value.find_first_of("/$") == std::string::npos)) continue;
    const expanded e = expand(value, w.line, lookup, 0);
    s.checkpoint_paths.emplace_back(w.line, e.known ? e.text : "");
  }
}

// The Python programs a command runs: its words that end in .py as the script expands
// them (`torchrun ... train.py`, `python3 "$TRAIN_SCRIPT"`), and those inside a quoted
// command line (`bash -c "exec $launch $TRAIN_SCRIPT ..."`, each of its words expanded
// alone); never a message's.
void note_programs(const command& c, const lookup_fn& lookup, batch_script& s) {
  if (c.empty() || c[0].raw == "echo" || c[0].raw == "printf") return;
  for (const raw_word& w : c) {
    std::vector<std::string> parts;
    std::string part;
    for (const char ch : w.raw + " ") {
      if (ch != ' ' && ch != '\t' && ch != '\n') {
        part += ch;
      } else if (!part.empty()) {
        parts.push_back(part);
        part.clear();
      }
    }
    for (std::string p : parts) {
      if (parts.size() > 1) {  // a word of a quoted command line: its quotes are the line's
        while (!p.empty() && (p.front() == '"' || p.front() == '\'')) p.erase(0, 1);
        while (!p.empty() && (p.back() == '"' || p.back() == '\'' || p.back() == '\\')) p.pop_back();
      }
      const expanded e = expand(p, w.line, lookup, 0);
      const std::string& path = e.text;
      if (!e.known || path.size() < 4 || path.compare(path.size() - 3, 3, ".py") != 0 ||
          path.find_first_of("= ") != std::string::npos)
        continue;
      const bool seen = std::any_of(s.programs.begin(), s.programs.end(),
                                    [&](const std::pair<int, std::string>& q) { return q.second == path; });
      if (!seen) s.programs.emplace_back(w.line, path);
    }
  }
}

// A trainctl-run (or `trainctl run`) command: its options, as the script expands them.
void note_trainctl_run(const command& c, const lookup_fn& lookup, batch_script& s) {
  std::vector<std::string> words;
  for (const raw_word& w : c) words.push_back(w.raw);
  for (size_t i = 0; i < words.size(); ++i) {
    if (!is_trainctl_run(words, i)) continue;
    std::vector<script_option> opts;
    bool batch = false;
    for (size_t j = i + (words[i].find("trainctl-run") == std::string::npos ? 2 : 1); j < c.size(); ++j) {
      const expanded e = expand(c[j].raw, c[j].line, lookup, 0);
      if (e.text == "--" || e.text.rfind("--", 0) != 0) break;
      script_option o = split_option(e.text, c[j].line);
      o.known = e.known;
      if (o.name == "--batch") batch = true;
      opts.push_back(o);
    }
    s.runs.push_back(opts);
    s.run_is_batch.push_back(batch);
    break;
  }
}

}  // namespace

std::optional<batch_script> read_batch_script(const std::string& text, const std::string& file_name,
                                              const std::vector<std::string>& cli_args, const env_lookup& env,
                                              std::string* why) {
  if (text.rfind("#!", 0) != 0) {
    *why = "it is not a batch script: its first line does not start with #! (sbatch refuses it)";
    return std::nullopt;
  }
  batch_script s;
  *why = read_sbatch_lines(text, s);
  if (!why->empty()) return std::nullopt;
  // sbatch's input variables come between the script's lines and the command line.
  for (const auto& [var, option] : kInputVariables) {
    const std::string value = env(var);
    if (value.empty()) continue;
    if (option[0] == '!')
      s.sbatch.push_back({option + 1, "", false, true, 0});
    else
      s.sbatch.push_back({option, value, true, true, 0});
  }
  const std::string err = parse_sbatch_args(cli_args, 0, &s.sbatch);
  if (!err.empty()) {
    *why = err;
    return std::nullopt;
  }
  const std::string job_name = job_name_of(s, file_name);

  // The body: assignments (for the values of trainctl-run's options) and trainctl-run.
  const std::vector<command> cmds = commands_of(text);
  std::map<std::string, std::vector<std::pair<int, std::string>>> assigned;  // name -> (line, raw value)
  for (const command& c : cmds)
    for (size_t i = 0; i < c.size(); ++i) {
      const std::string& w = c[i].raw;
      if (i == 0 && (w == "export" || w == "local" || w == "readonly" || w == "declare")) continue;
      const size_t eq = w.find('=');
      if (eq == std::string::npos || !is_name(w.substr(0, eq))) break;
      assigned[w.substr(0, eq)].emplace_back(c[i].line, w.substr(eq + 1));
    }
  lookup_fn lookup = [&](const std::string& name, int at_line, int depth) -> std::optional<std::string> {
    if (name == "SLURM_JOB_NAME") return job_name;
    const auto it = assigned.find(name);
    if (it != assigned.end() && depth < 8) {
      const std::pair<int, std::string>* latest = nullptr;
      for (const auto& a : it->second)
        if (a.first < at_line) latest = &a;
      if (latest != nullptr) {
        // NAME=${NAME:-x} names the environment's NAME: look it up from before this line.
        const expanded e = expand(latest->second, latest->first, lookup, depth + 1);
        if (!e.known) return std::nullopt;
        return e.text;
      }
    }
    if (name.rfind("SLURM_", 0) == 0 && name != "SLURM_SUBMIT_DIR") return std::nullopt;
    const std::string value = env(name.c_str());
    if (value.empty()) return std::nullopt;
    return value;
  };

  for (const command& c : cmds) {
    note_checkpoint_words(c, lookup, s);
    note_trainctl_run(c, lookup, s);
    note_programs(c, lookup, s);
  }
  return s;
}

namespace {

bool is_plugin_option(const std::string& name) {
  for (const run_option& row : run_option_table())
    if (row.in_plugin() && name == row.name) return true;
  return false;
}

const run_option* row_named(const std::string& name) {
  for (const run_option& row : run_option_table())
    if (name == row.name) return &row;
  return nullptr;
}

}  // namespace

script_supervision supervision_of(const batch_script& s, const env_lookup& env) {
  script_supervision sup;
  std::vector<script_option> given;
  for (const script_option& o : s.sbatch)
    if (is_plugin_option(o.name)) given.push_back(o);
  if (!given.empty()) {
    sup.supervisor = "the SPANK plugin";
  } else if (!s.runs.empty()) {
    sup.supervisor = "trainctl-run";
    given = s.runs.front();
    for (size_t i = 0; i < s.runs.size(); ++i)
      if (!s.run_is_batch[i]) {
        given = s.runs[i];
        break;
      }
  }
  std::vector<given_option> ok;
  for (const script_option& g : given) {
    const run_option* row = row_named(g.name);
    if (row == nullptr) {
      std::vector<std::string> names;
      for (const run_option& o : run_option_table()) names.emplace_back(o.name);
      const std::string near = closest_word(g.name, names);
      sup.errors.emplace_back(g.line,
                              "'" + g.name.substr(0, 40) + "' is not an option of trainctl-run" +
                                  (near.empty() ? "; see trainctl-run --help" : "; did you mean " + near + "?"));
      sup.misspelt = true;
      continue;
    }
    sup.line_of[g.name] = g.line;
    if (!g.known) {
      sup.unknown.insert(g.name);
      continue;
    }
    try {
      supervisor_options probe;
      apply_run_option(*row, probe, g.value);
      ok.push_back({row, g.value});
    } catch (const parse_error& e) {
      sup.errors.emplace_back(g.line, std::string(e.what()) + " (the job would fail at its start)");
      sup.unknown.insert(g.name);
    }
  }
  try {
    sup.options = supervisor_options_from(ok, env);
  } catch (const parse_error& e) {
    sup.errors.emplace_back(ok.empty() ? 0 : sup.line_of[ok.front().row->name], e.what());
  }
  return sup;
}

}  // namespace trainctl
