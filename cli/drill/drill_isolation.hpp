// Whether a drill's array keeps apart from the real run: the drill gives its job a name
// of its own and its own CKPT_DIR, LOG_DIR and TRAINCTL_LOG_DIR, which reach the job
// only where the script takes its paths from them (the template does) and --export
// passes them. The script is read twice, as the real run's job and as the drill's, and
// every checkpoint path and switch path compared: one that is the same in both is
// written into the script, and a drill would resume from and commit into the real
// run's checkpoints, or touch the real run's switches. Such a script is refused before
// anything is submitted.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "batch_script.hpp"

namespace trainctl {

struct drill_identity {
  std::string real_name, drill_name;         // the jobs' names
  std::string submit_dir;                    // SLURM_SUBMIT_DIR of both
  std::map<std::string, std::string> drill;  // what the drill exports on top of the shell's
};

// "" when every path differs (or cannot be known), else one line naming the first that
// does not: "LINE: the checkpoint path P is the real run's too ...".
std::string shared_with_the_real_run(const std::string& text, const std::string& path,
                                     const std::vector<std::string>& sbatch_args, const drill_identity& id,
                                     const env_lookup& submitting);

}  // namespace trainctl
