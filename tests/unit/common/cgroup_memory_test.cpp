#include "cgroup_memory.hpp"

#include "fixture.hpp"

using namespace trainctl;
using trainctl_test::temp_dir;

namespace {

const char* kMeminfo =
    "MemTotal:       16000000 kB\n"
    "MemFree:         1000000 kB\n"
    "MemAvailable:    8000000 kB\n";

void write_v2_tree(const temp_dir& t, const std::string& limit_at_job) {
  t.write("proc/self/cgroup", "0::/slurm/job_7/step_0/task_1\n");
  t.write("proc/self/mountinfo",
          "30 25 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate\n");
  t.write("proc/meminfo", kMeminfo);
  const std::string base = "sys/fs/cgroup/slurm/job_7";
  t.write(base + "/memory.max", limit_at_job);
  t.write(base + "/memory.current", "3221225472\n");  // 3 GiB
  t.write(base + "/memory.stat", "anon 1\ninactive_file 1073741824\nactive_file 5\n");
  t.write(base + "/step_0/memory.max", "max\n");
  t.write(base + "/step_0/memory.current", "100\n");
  t.write(base + "/step_0/task_1/memory.max", "max\n");
  t.write(base + "/step_0/task_1/memory.current", "100\n");
}

}  // namespace

TEST(CgroupMemory, V2TakesTheTightestLimitAboveAndSubtractsInactiveCache) {
  temp_dir t;
  write_v2_tree(t, "4294967296\n");  // 4 GiB
  auto r = read_memory(t.path());
  ASSERT_TRUE(r);
  EXPECT_EQ(r->limit, 4ull << 30);
  EXPECT_EQ(r->used, 2ull << 30);  // 3 GiB current - 1 GiB inactive file cache
  EXPECT_EQ(r->source, "cgroup v2 /slurm/job_7");
  EXPECT_DOUBLE_EQ(r->used_percent(), 50.0);
  EXPECT_TRUE(memory_crossed(*r, parse_threshold("51%"))) << "50% left is less than 51% left";
  EXPECT_FALSE(memory_crossed(*r, parse_threshold("50%")));
  EXPECT_TRUE(memory_crossed(*r, parse_threshold("3G")));  // 2 GiB left < 3G
  EXPECT_FALSE(memory_crossed(*r, parse_threshold("2G")));
}

TEST(CgroupMemory, V2WithoutLimitFallsBackToTheNode) {
  temp_dir t;
  write_v2_tree(t, "max\n");
  auto r = read_memory(t.path());
  ASSERT_TRUE(r);
  EXPECT_EQ(r->source, "node");
  EXPECT_EQ(r->limit, 16000000ull * 1024);
  EXPECT_EQ(r->available(), 8000000ull * 1024);
}

TEST(CgroupMemory, NodeShorterThanTheCgroupWins) {
  temp_dir t;
  write_v2_tree(t, "17179869184\n");  // 16 GiB limit, 14 GiB free in the cgroup
  auto r = read_memory(t.path());
  ASSERT_TRUE(r);
  EXPECT_EQ(r->source, "node (below cgroup v2 /slurm/job_7)");
}

TEST(CgroupMemory, V1MemoryControllerWithSharedHierarchy) {
  temp_dir t;
  t.write("proc/self/cgroup",
          "5:cpuacct,cpu:/slurm_n1/uid_0/job_2\n4:memory:/slurm_n1/uid_0/job_2/step_0/task_0\n1:name=systemd:/x\n");
  t.write("proc/self/mountinfo",
          "40 30 0:35 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
          "41 30 0:36 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n");
  t.write("proc/meminfo", kMeminfo);
  const std::string job = "sys/fs/cgroup/memory/slurm_n1/uid_0/job_2";
  t.write(job + "/memory.limit_in_bytes", "1073741824\n");
  t.write(job + "/memory.usage_in_bytes", "805306368\n");
  t.write(job + "/memory.stat", "cache 5\ntotal_inactive_file 268435456\n");
  t.write(job + "/step_0/task_0/memory.limit_in_bytes", "9223372036854771712\n");
  t.write(job + "/step_0/task_0/memory.usage_in_bytes", "1\n");
  auto r = read_memory(t.path());
  ASSERT_TRUE(r);
  EXPECT_EQ(r->source, "cgroup v1 /slurm_n1/uid_0/job_2");
  EXPECT_EQ(r->limit, 1ull << 30);
  EXPECT_EQ(r->used, 512ull << 20);
}

TEST(CgroupMemory, MountRootInsideANamespaceIsStripped) {
  temp_dir t;
  t.write("proc/self/cgroup", "0::/container/job\n");
  t.write("proc/self/mountinfo", "30 25 0:26 /container /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n");
  t.write("sys/fs/cgroup/job/memory.max", "1000\n");
  t.write("sys/fs/cgroup/job/memory.current", "900\n");
  auto r = read_memory(t.path());
  ASSERT_TRUE(r);
  EXPECT_EQ(r->limit, 1000u);
  EXPECT_EQ(r->used, 900u);
}

TEST(CgroupMemory, NothingReadableIsNoReading) {
  temp_dir t;
  EXPECT_FALSE(read_memory(t.path()));
  t.write("proc/meminfo", "MemTotal: garbage\n");
  EXPECT_FALSE(read_memory(t.path()));
}

TEST(CgroupMemory, FieldParsers) {
  EXPECT_EQ(meminfo_field(kMeminfo, "MemAvailable"), 8000000ull * 1024);
  EXPECT_FALSE(meminfo_field(kMeminfo, "MemAvail"));
  EXPECT_EQ(memory_stat_field("a 1\nb 2\n", "b"), 2u);
  EXPECT_FALSE(memory_stat_field("a x\nb 2\n", "b"));
}

TEST(CgroupMemory, ThisProcessHasAReading) {
  auto r = read_memory();
  ASSERT_TRUE(r);
  EXPECT_GT(r->limit, 0u);
}

// trainwatch memory --job reads from a helper step beside the training's steps: the job's
// cgroup is what they all use, even where the helper's own step has the same limit (as
// SLURM's cgroup v1 sets it) and the step's usage is the helper's alone.
TEST(CgroupMemory, TheWholeJobIsReadFromAStepsCgroupWhenAsked) {
  EXPECT_EQ(job_cgroup_of("/slurm_n1/uid_1000/job_77/step_0"), "/slurm_n1/uid_1000/job_77");
  EXPECT_EQ(job_cgroup_of("/system.slice/slurmstepd.scope/job_77/step_batch/user/task_0"),
            "/system.slice/slurmstepd.scope/job_77");
  EXPECT_EQ(job_cgroup_of("/user.slice/user-1000.slice"), "/user.slice/user-1000.slice");
  EXPECT_EQ(job_cgroup_of("/job_x/step_0"), "/job_x/step_0");
  temp_dir t;
  write_v2_tree(t, "4294967296\n");
  t.write("sys/fs/cgroup/slurm/job_7/step_0/memory.max", "4294967296\n");  // the job's limit again
  EXPECT_EQ(read_memory(t.path())->source, "cgroup v2 /slurm/job_7/step_0") << "the step's, by itself";
  const auto job = read_memory(t.path(), "self", true);
  ASSERT_TRUE(job);
  EXPECT_EQ(job->source, "cgroup v2 /slurm/job_7");
  EXPECT_EQ(job->used, 2ull << 30);
}

// The OOM killer's count is read in the process's own memory cgroup (its ranks stay in
// it), else the node's.
TEST(CgroupMemory, OomKillsAreCountedInTheOwnCgroupElseTheNode) {
  temp_dir t;
  t.write("proc/self/cgroup", "4:memory:/slurm_n1/uid_0/job_2/step_0/task_0\n1:name=systemd:/x\n");
  t.write("proc/self/mountinfo", "40 30 0:35 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n");
  t.write("proc/vmstat", "pgfault 10\noom_kill 7\n");
  const std::string task = "sys/fs/cgroup/memory/slurm_n1/uid_0/job_2/step_0/task_0";
  t.write(task + "/memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n");
  oom_counter c = find_oom_counter(t.path());
  EXPECT_EQ(c.source, "cgroup v1 /slurm_n1/uid_0/job_2/step_0/task_0");
  EXPECT_EQ(read_oom_kills(c), 2u);

  temp_dir v2;
  v2.write("proc/self/cgroup", "0::/slurm/job_7/step_0/user/task_1\n");
  v2.write("proc/self/mountinfo", "30 25 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n");
  v2.write("sys/fs/cgroup/slurm/job_7/step_0/user/task_1/memory.events", "low 0\nhigh 0\nmax 4\noom 1\noom_kill 1\n");
  c = find_oom_counter(v2.path());
  EXPECT_EQ(c.source, "cgroup v2 /slurm/job_7/step_0/user/task_1");
  EXPECT_EQ(read_oom_kills(c), 1u);

  temp_dir node;  // a memory cgroup without the count (a kernel before 4.13 has none in either)
  node.write("proc/self/cgroup", "4:memory:/\n");
  node.write("proc/self/mountinfo", "40 30 0:35 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n");
  node.write("sys/fs/cgroup/memory/memory.oom_control", "oom_kill_disable 0\nunder_oom 0\n");
  node.write("proc/vmstat", "pgfault 10\noom_kill 7\n");
  c = find_oom_counter(node.path());
  EXPECT_EQ(c.source, "node");
  EXPECT_EQ(read_oom_kills(c), 7u);
  EXPECT_FALSE(read_oom_kills(find_oom_counter(temp_dir().path())));
}
