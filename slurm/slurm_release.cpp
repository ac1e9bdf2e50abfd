#include "slurm_release.hpp"

#include <slurm/slurm.h>  // SLURM_VERSION_NUMBER (20.11 has no slurm_version.h)

#include <cctype>
#include <cstdio>

#include "subprocess.hpp"

namespace trainctl {

std::string slurm_release::text() const {
  char text[32];
  std::snprintf(text, sizeof text, "%d.%02d.%d", major, minor, micro);  // as SLURM writes it: 22.05.8
  return text;
}

std::optional<slurm_release> parse_slurm_release(const std::string& output) {
  // The first word that starts with a digit: "slurm 24.11.5", "slurm-wlm 22.05.8".
  for (std::size_t i = 0; i < output.size() && output[i] != '\n'; ++i) {
    if (!std::isdigit(static_cast<unsigned char>(output[i])) || (i > 0 && output[i - 1] != ' ')) continue;
    slurm_release r;
    if (std::sscanf(output.c_str() + i, "%3d.%2d.%3d", &r.major, &r.minor, &r.micro) < 2 || r.major < 1)
      return std::nullopt;
    r.source = "scontrol --version";
    return r;
  }
  return std::nullopt;
}

slurm_release slurm_release_here(std::chrono::milliseconds timeout) {
  child_spec spec;
  spec.argv = {"scontrol", "--version"};
  spec.deadline = timeout;
  spec.max_output = 4096;
  const child_result out = run_child(spec);
  std::string why = out.error;
  if (out.ok()) {
    if (std::optional<slurm_release> r = parse_slurm_release(out.output)) return *r;
    why = "scontrol --version printed no release: '" + out.output.substr(0, out.output.find('\n')).substr(0, 80) + "'";
  }
  slurm_release built;
  built.major = SLURM_VERSION_MAJOR(SLURM_VERSION_NUMBER);
  built.minor = SLURM_VERSION_MINOR(SLURM_VERSION_NUMBER);
  built.micro = SLURM_VERSION_MICRO(SLURM_VERSION_NUMBER);
  built.source = "the release trainctl was built against; " + why;
  return built;
}

bool requeues_preempted_jobs(const slurm_release& r) { return r.number() >= SLURM_VERSION_NUM(24, 5, 0); }

}  // namespace trainctl
