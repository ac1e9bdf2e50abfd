// trainctl report at scale: a 1,000-task array, each task with 20 saves and a notice,
// from the events file's text to the text, JSON and SVG. Prints figures; asserts nothing.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "report_views.hpp"
#include "run_events.hpp"

namespace {

constexpr std::int64_t kT0 = 1'700'000'000'000;

struct array_fixture {
  std::vector<trainctl::task_record> tasks;
  std::string events;
  explicit array_fixture(int n) {
    for (int i = 0; i < n; ++i) {
      const std::int64_t start = kT0 + i * 3'600'000LL, id = 1000 + i;
      trainctl::task_record t;
      t.job_id = std::to_string(id);
      t.name = "999_" + std::to_string(i + 1);
      t.state = "COMPLETED";
      t.start_ms = start;
      t.end_ms = start + 3'500'000;
      t.submit_ms = kT0;
      t.nodes = 8;
      tasks.push_back(t);
      auto add = [&](std::int64_t at, const char* what, std::int64_t step, std::int64_t took, const char* reason) {
        trainctl::run_event e;
        e.ms = start + at;
        e.job = t.job_id;
        e.what = what;
        e.step = step;
        e.took_ms = took;
        e.reason = reason;
        events += trainctl::format_run_event(e);
      };
      add(60'000, "first_step", i * 10'000, -1, "");
      for (int s = 0; s < 20; ++s) {
        add(120'000 + s * 160'000, "save", i * 10'000 + s * 400, -1, "save-switch");
        add(150'000 + s * 160'000, "saved", -1, 30'000, "");
      }
      add(3'400'000, "notice", -1, -1, "deadline");
      add(3'401'000, "exit", i * 10'000 + 9'000, -1, "deadline");
      add(3'431'000, "saved", -1, 30'000, "");
      // What each of the 8 nodes' supervisors writes as it ends (8 ranks each), and rank 0's
      // step times: the straggler's price and the slow steps.
      for (int n = 0; n < 8; ++n) {
        trainctl::run_event c;
        c.ms = start + 3'432'000;
        c.job = t.job_id;
        c.what = "compute";
        c.figures = {{"steps", 9'000}, {"slowest_us", 330'000}, {"marked", 1}};
        for (int r = 0; r < 8; ++r) c.works.emplace_back(n * 8 + r, 300'000 + r * 1'000 + (n == 3 && r == 5) * 30'000);
        events += trainctl::format_run_event(c);
      }
      trainctl::run_event st;
      st.ms = start + 3'431'500;
      st.job = t.job_id;
      st.what = "step_times";
      st.figures = {
          {"steps", 8'980}, {"median_us", 331'000}, {"mad_us", 4'000}, {"outliers", 12}, {"excess_us", 9'000'000}};
      events += trainctl::format_run_event(st);
      add(3'431'000, "end", i * 10'000 + 9'000, -1, "");
    }
  }
};

void BM_report_of_array(benchmark::State& state) {
  const array_fixture f(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    const auto events = trainctl::parse_run_events(f.events);
    const auto report = trainctl::build_run_report("999", f.tasks, events, kT0 + 4'000'000'000LL);
    benchmark::DoNotOptimize(trainctl::run_report_text(report));
    benchmark::DoNotOptimize(trainctl::run_report_json(report));
    benchmark::DoNotOptimize(trainctl::run_report_svg(report));
  }
  state.counters["events_bytes"] = static_cast<double>(f.events.size());
}
BENCHMARK(BM_report_of_array)->Arg(10)->Arg(100)->Arg(1000)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
