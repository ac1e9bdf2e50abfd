#include "drill_isolation.hpp"

#include <cstring>
#include <optional>

#include "job_environment.hpp"

namespace trainctl {
namespace {

// The script as the job named `name` reads it, with `extra` exported on top of the
// submitting shell's environment (as far as --export lets them through).
std::optional<batch_script> read_as(const std::string& text, const std::string& path,
                                    const std::vector<std::string>& args, const std::string& name,
                                    const std::string& submit_dir, const std::map<std::string, std::string>& extra,
                                    const env_lookup& submitting, const std::string* export_value) {
  const env_lookup shell = [&](const char* n) -> std::string {
    const auto it = extra.find(n);
    return it != extra.end() ? it->second : submitting(n);
  };
  const job_environment job(export_value, shell);
  const env_lookup env = [&](const char* n) -> std::string {
    if (std::strcmp(n, "SLURM_SUBMIT_DIR") == 0) return submit_dir;
    if (std::strcmp(n, "SLURM_JOB_NAME") == 0) return name;
    return job(n);
  };
  std::string why;
  return read_batch_script(text, path, args, env, &why);
}

std::string where(const std::string& path, int line) {
  return line > 0 ? path + ":" + std::to_string(line) : path + " (sbatch's options)";
}

}  // namespace

std::string shared_with_the_real_run(const std::string& text, const std::string& path,
                                     const std::vector<std::string>& sbatch_args, const drill_identity& id,
                                     const env_lookup& submitting) {
  const std::map<std::string, std::string> none;
  // --export, from the script's #SBATCH lines or the command line: read once to find it.
  const auto first = read_as(text, path, sbatch_args, id.real_name, id.submit_dir, none, submitting, nullptr);
  if (!first) return "";
  const script_option* ex = first->last("--export");
  const std::string* export_value = ex != nullptr && ex->has_value ? &ex->value : nullptr;
  const auto real = read_as(text, path, sbatch_args, id.real_name, id.submit_dir, none, submitting, export_value);
  std::vector<std::string> drill_args = sbatch_args;
  drill_args.push_back("--job-name=" + id.drill_name);  // as the drill submits it
  const auto drill = read_as(text, path, drill_args, id.drill_name, id.submit_dir, id.drill, submitting, export_value);
  if (!real || !drill || real->checkpoint_paths.size() != drill->checkpoint_paths.size() ||
      real->runs.size() != drill->runs.size())
    return "";
  const std::string fix =
      "; take it from the environment or the job's name (CKPT_DIR=${CKPT_DIR:-...}, as the template does), which "
      "the drill sets";
  const std::string switch_fix =
      "; leave its path to trainctl (a bare switch option: it names the file after the job) or take it from the "
      "job's name";
  for (std::size_t i = 0; i < real->checkpoint_paths.size(); ++i) {
    const auto& [line, p] = real->checkpoint_paths[i];
    if (!p.empty() && p == drill->checkpoint_paths[i].second)
      return where(path, line) + ": the checkpoint path " + p +
             " is the real run's too, so the drill would resume from and commit into the real run's checkpoints" +
             (export_value != nullptr ? " (--export=" + *export_value + " keeps the drill's CKPT_DIR from the job)"
                                      : "") +
             fix;
  }
  for (std::size_t r = 0; r < real->runs.size(); ++r)
    for (std::size_t k = 0; k < real->runs[r].size() && k < drill->runs[r].size(); ++k) {
      const script_option& o = real->runs[r][k];
      if ((o.name == "--kill-switch" || o.name == "--save-switch") && o.has_value && o.known &&
          o.value == drill->runs[r][k].value)
        return where(path, o.line) + ": " + o.name + "=" + o.value +
               " is the real run's switch too, so the drill would touch it" + switch_fix;
    }
  for (const char* name : {"--kill-switch", "--save-switch"}) {  // the plugin's, on #SBATCH lines
    const script_option* o = real->last(name);
    const script_option* d = drill->last(name);
    if (o != nullptr && d != nullptr && o->has_value && o->known && o->value == d->value)
      return where(path, o->line) + ": " + o->name + "=" + o->value +
             " is the real run's switch too, so the drill would touch it" + switch_fix;
  }
  return "";
}

}  // namespace trainctl
