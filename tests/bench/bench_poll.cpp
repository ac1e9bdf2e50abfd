// The cost of asking "should this rank exit?": trainctl's poll (C++ API and C ABI)
// against what people do today, a stat() or access() of the switch file per step.
#include <benchmark/benchmark.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "trainctl/controller.hpp"
#include "trainctl/trainctl.h"

namespace {

// A switch directory on the local disk: the cheapest stat there is. On NFS or Lustre a
// stat is a network round trip (hundreds of microseconds) unless cached.
struct switch_dir {
  std::string dir;
  switch_dir() {
    char tmpl[] = "/tmp/trainctl-bench-XXXXXX";
    dir = mkdtemp(tmpl);
  }
  ~switch_dir() {
    unlink((dir + "/PRESENT").c_str());
    rmdir(dir.c_str());
  }
};
switch_dir g_dir;

trainctl::config bench_config() {
  trainctl::config c;
  c.set("kill_switch", g_dir.dir + "/KILL");
  c.set("save_switch", g_dir.dir + "/SAVE");
  c.set("state_path", g_dir.dir + "/state");
  c.set("signals", "none");
  return c;
}

void BM_trainctl_should_exit_cpp(benchmark::State& state) {
  trainctl::controller ctl(bench_config());
  for (auto _ : state) benchmark::DoNotOptimize(ctl.should_exit());
}
BENCHMARK(BM_trainctl_should_exit_cpp);

void BM_trainctl_should_exit_c(benchmark::State& state) {
  trainctl_config* cfg = nullptr;
  trainctl_config_create(&cfg);
  trainctl_config_set(cfg, "state_path", (g_dir.dir + "/state-c").c_str());
  trainctl_config_set(cfg, "kill_switch", (g_dir.dir + "/KILL").c_str());
  trainctl_config_set(cfg, "signals", "none");
  trainctl_ctl* ctl = nullptr;
  trainctl_create(cfg, &ctl);
  trainctl_config_destroy(cfg);
  for (auto _ : state) benchmark::DoNotOptimize(trainctl_should_exit(ctl));
  trainctl_destroy(ctl);
}
BENCHMARK(BM_trainctl_should_exit_c);

// check() at every step with an agreement due every step (check_every 1), through a
// reducer that does no communication: the library's own cost per agreement (vote,
// heartbeat, step time, decision). Arg 1: straggler detection on (the default), 0: off.
void BM_trainctl_check_agreement(benchmark::State& state) {
  trainctl::config c = bench_config();
  c.set("state_path", g_dir.dir + "/state-check");
  c.set("check_every", "1");
  if (state.range(0) == 0) c.set("straggler_factor", "0");
  trainctl::controller ctl(c);
  std::int64_t step = 0;
  const trainctl::controller::reducer local = [](std::int64_t*, std::size_t) {};
  for (auto _ : state) benchmark::DoNotOptimize(ctl.check(step++, local));
}
BENCHMARK(BM_trainctl_check_agreement)->Arg(0)->Arg(1);

// check() with the default agreement every 10th step: the mean per call, the nine calls
// between agreements included (each stores its step in the rank's heartbeat slot, so
// that a crash's step is the rank's own).
void BM_trainctl_check_every10(benchmark::State& state) {
  trainctl::config c = bench_config();
  c.set("state_path", g_dir.dir + "/state-check10");
  c.set("check_every", "10");
  trainctl::controller ctl(c);
  std::int64_t step = 0;
  const trainctl::controller::reducer local = [](std::int64_t*, std::size_t) {};
  for (auto _ : state) benchmark::DoNotOptimize(ctl.check(step++, local));
}
BENCHMARK(BM_trainctl_check_every10);

// A compute mark per step (compute_begin + compute_end, as watch_ddp or ctl.compute()
// does): what marking a step adds to it.
void BM_trainctl_compute_marks(benchmark::State& state) {
  trainctl::config c = bench_config();
  c.set("state_path", g_dir.dir + "/state-compute");
  trainctl::controller ctl(c);
  for (auto _ : state) {
    ctl.compute_begin();
    ctl.compute_end();
  }
}
BENCHMARK(BM_trainctl_compute_marks);

// A marked phase per step (phase_begin + phase_end, as `with ctl.phase("eval")` does):
// what marking an evaluation or the loop's own save adds to it.
void BM_trainctl_phase_marks(benchmark::State& state) {
  trainctl::config c = bench_config();
  c.set("state_path", g_dir.dir + "/state-phase");
  trainctl::controller ctl(c);
  const std::string name = "eval";
  for (auto _ : state) {
    ctl.phase_begin(name);
    ctl.phase_end();
  }
}
BENCHMARK(BM_trainctl_phase_marks);

void BM_stat_absent_switch(benchmark::State& state) {
  const std::string path = g_dir.dir + "/KILL";
  struct stat st {};
  for (auto _ : state) benchmark::DoNotOptimize(stat(path.c_str(), &st));
}
BENCHMARK(BM_stat_absent_switch);

void BM_stat_present_switch(benchmark::State& state) {
  const std::string path = g_dir.dir + "/PRESENT";
  std::ofstream(path).flush();
  struct stat st {};
  for (auto _ : state) benchmark::DoNotOptimize(stat(path.c_str(), &st));
}
BENCHMARK(BM_stat_present_switch);

void BM_access_absent_switch(benchmark::State& state) {
  const std::string path = g_dir.dir + "/KILL";
  for (auto _ : state) benchmark::DoNotOptimize(access(path.c_str(), F_OK));
}
BENCHMARK(BM_access_absent_switch);

}  // namespace

BENCHMARK_MAIN();
