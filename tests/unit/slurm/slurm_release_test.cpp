#include "slurm_release.hpp"

#include <gtest/gtest.h>

using namespace trainctl;

TEST(SlurmRelease, ReadFromWhatScontrolVersionPrints) {
  const auto upstream = parse_slurm_release("slurm 24.11.5\n");
  ASSERT_TRUE(upstream);
  EXPECT_EQ(upstream->text(), "24.11.5");
  EXPECT_EQ(upstream->source, "scontrol --version");
  const auto debian = parse_slurm_release("slurm-wlm 22.05.8\n");
  ASSERT_TRUE(debian);
  EXPECT_EQ(debian->text(), "22.05.8") << "the minor as SLURM writes it";
  const auto two = parse_slurm_release("slurm 26.05\n");
  ASSERT_TRUE(two);
  EXPECT_EQ(two->text(), "26.05.0");
  EXPECT_FALSE(parse_slurm_release("scontrol: fatal: Could not establish a configuration source\n"));
  EXPECT_FALSE(parse_slurm_release(""));
  EXPECT_FALSE(parse_slurm_release("slurm-23.11\n")) << "a number inside a word is no release";
}

TEST(SlurmRelease, FromTwentyFourFiveTheControllerRequeuesAPreemptedJobItself) {
  EXPECT_FALSE(requeues_preempted_jobs(*parse_slurm_release("slurm 20.11.9")));
  EXPECT_FALSE(requeues_preempted_jobs(*parse_slurm_release("slurm-wlm 22.05.8")));
  EXPECT_FALSE(requeues_preempted_jobs(*parse_slurm_release("slurm 23.11.10")));
  EXPECT_TRUE(requeues_preempted_jobs(*parse_slurm_release("slurm 24.05.0")));
  EXPECT_TRUE(requeues_preempted_jobs(*parse_slurm_release("slurm 24.11.5")));
  EXPECT_TRUE(requeues_preempted_jobs(*parse_slurm_release("slurm 26.05.5")));
}
