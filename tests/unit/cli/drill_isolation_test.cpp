#include "drill_isolation.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

using namespace trainctl;

namespace {

drill_identity identity() {
  drill_identity id;
  id.real_name = "llm.slurm";
  id.drill_name = "llm.slurm-drill";
  id.submit_dir = "/home/me/llm";
  id.drill = {{"CKPT_DIR", "/home/me/llm/trainctl-drill-x/checkpoints"},
              {"LOG_DIR", "/home/me/llm/trainctl-drill-x/logs"}};
  return id;
}

std::string shared(const std::string& text, const std::vector<std::string>& args = {}) {
  return shared_with_the_real_run(text, "llm.slurm", args, identity(), [](const char*) { return std::string(); });
}

}  // namespace

TEST(DrillIsolation, PathsFromTheEnvironmentOrTheJobNameAreTheDrillsOwn) {
  EXPECT_EQ(shared("#!/bin/bash\nCKPT=${CKPT_DIR:-/scratch/ckpt}\nsrun trainctl-run --kill-switch -- python3 t.py "
                   "--ckpt-dir $CKPT\n"),
            "");
  EXPECT_EQ(shared("#!/bin/bash\n#SBATCH --export=NONE\nsrun trainctl-run -- python3 t.py --ckpt-dir "
                   "/scratch/$SLURM_JOB_NAME/ckpt\n"),
            "")
      << "the job's name reaches the job whatever --export says";
  EXPECT_EQ(shared("#!/bin/bash\necho checkpoints go to /scratch/ckpt\nsrun trainctl-run -- python3 t.py --ckpt-dir "
                   "$CKPT_DIR\n"),
            "")
      << "a message is no path";
  std::ifstream in(TRAINCTL_TEMPLATE);
  std::stringstream tmpl;
  tmpl << in.rdbuf();
  EXPECT_EQ(shared(tmpl.str()), "") << "the template";
  EXPECT_EQ(shared(tmpl.str(), {"--export=NONE"}), "") << "the template under --export=NONE: by the job's name";
}

TEST(DrillIsolation, APathWrittenIntoTheScriptIsRefusedWithItsLine) {
  EXPECT_EQ(shared("#!/bin/bash\n#SBATCH -N1\nsrun trainctl-run -- python3 t.py --ckpt-dir /scratch/ckpt\n")
                .rfind("llm.slurm:3: the checkpoint path /scratch/ckpt is the real run's too", 0),
            0U);
  const std::string none = shared(
      "#!/bin/bash\nCKPT_DIR=${CKPT_DIR:-/scratch/ckpt}\nsrun trainctl-run -- python3 "
      "t.py --ckpt-dir $CKPT_DIR\n",
      {"--export=NONE"});
  EXPECT_NE(none.find("llm.slurm:2: the checkpoint path /scratch/ckpt is the real run's too"), std::string::npos)
      << none;
  EXPECT_NE(none.find("(--export=NONE keeps the drill's CKPT_DIR from the job)"), std::string::npos) << none;
  const std::string set = shared(
      "#!/bin/bash\nCKPT_DIR=${CKPT_DIR:-/scratch/ckpt}\nsrun trainctl-run -- python3 "
      "t.py --ckpt-dir $CKPT_DIR\n",
      {"--export=ALL,CKPT_DIR=/scratch/other"});
  EXPECT_NE(set.find("llm.slurm:2: the checkpoint path /scratch/other is the real run's too"), std::string::npos)
      << "a value --export sets is the same for both jobs: " << set;
  EXPECT_EQ(shared("#!/bin/bash\nsrun trainctl-run -- python3 hf.py --output_dir /scratch/hf-run\n")
                .rfind("llm.slurm:2: the checkpoint path /scratch/hf-run is the real run's too", 0),
            0U)
      << "Hugging Face's Trainer keeps its checkpoints in --output_dir";
  EXPECT_NE(shared("#!/bin/bash\nsrun trainctl-run --save-switch=/scratch/SAVE -- python3 t.py --ckpt-dir $CKPT_DIR\n")
                .find("llm.slurm:2: --save-switch=/scratch/SAVE is the real run's switch too"),
            std::string::npos);
}
