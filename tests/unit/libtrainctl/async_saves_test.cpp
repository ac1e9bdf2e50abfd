// Saves whose write goes on after the loop hands it off (an asynchronous checkpoint):
// committed when the write ends well, never before; a rank ends after its writes, never
// past the job's end; the save counts to its commit. The writer here is a thread of the
// test, as DCP's async_save or a C++ loop's writer thread would be.
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "fixture.hpp"
#include "loop_clock.hpp"
#include "node_state.hpp"
#include "node_state_file.hpp"
#include "pending_writes.hpp"
#include "run_events.hpp"
#include "trainctl/controller.hpp"
#include "trainctl/trainctl.h"

using namespace trainctl;
using trainctl_test::temp_dir;
using namespace std::chrono_literals;

namespace {

config one_rank(const temp_dir& t) {
  config c;
  c.set("state_path", t / "state");
  c.set("poll_interval", "100ms");
  c.set("signals", "none");
  c.set("check_every", "1");
  c.set("rank", "0");
  c.set("world_size", "1");
  return c;
}

// The library's lines while it lives (trainctl_set_log_fn).
class captured_log {
 public:
  captured_log() { trainctl_set_log_fn(&captured_log::take, this); }
  ~captured_log() { trainctl_set_log_fn(nullptr, nullptr); }
  captured_log(const captured_log&) = delete;
  captured_log& operator=(const captured_log&) = delete;
  std::string text() const {
    std::lock_guard<std::mutex> hold(mu_);
    return text_;
  }

 private:
  static void take(int, const char* line, void* self) {
    auto* me = static_cast<captured_log*>(self);
    std::lock_guard<std::mutex> hold(me->mu_);
    me->text_ += std::string(line) + "\n";
  }
  mutable std::mutex mu_;
  std::string text_;
};

struct moved_clock {
  moved_clock() = default;
  moved_clock(const moved_clock&) = delete;
  moved_clock& operator=(const moved_clock&) = delete;
  ~moved_clock() { g_loop_clock_offset_us.store(0); }
  void pass(std::chrono::microseconds d) const { advance_loop_clock(d); }
};

const rank_beat* beat_of_me(const node_state& ns) {
  for (const rank_beat& b : ns.beats)
    if (b.pid.load() == getpid()) return &b;
  return nullptr;
}

std::string resumed(const temp_dir& t) {
  const std::string p = controller::resume_path(t / "ckpt");
  return p.empty() ? "(none)" : p.substr(t.path().size() + 1);
}

}  // namespace

TEST(PendingWrites, AWaitEndsWhenTheLastWriteEndsOrAtItsBound) {
  pending_writes w;
  const std::uint64_t a = w.add(10, "ckpt/10", 1, 2), b = w.add(20, "ckpt/20", 3, 4);
  EXPECT_NE(a, b);
  EXPECT_EQ(w.size(), 2u);
  EXPECT_EQ(w.list().front().step, 10) << "the oldest first";
  ASSERT_TRUE(w.claim(a));
  EXPECT_FALSE(w.claim(a)) << "a write ends once";
  EXPECT_EQ(w.size(), 2u) << "pending until its end is done";
  w.done(a);
  std::thread writer([&] {
    std::this_thread::sleep_for(50ms);
    ASSERT_TRUE(w.claim(b));
    w.done(b);
  });
  EXPECT_TRUE(w.wait(0, [] { return std::int64_t{0}; }).empty());
  writer.join();
  w.add(30, "ckpt/30", 5, 6);
  std::int64_t now = 0;
  const auto left = w.wait(1000, [&] { return now += 600; });  // the bound passes on the second look
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0].step, 30);
}

// The heart of it: resume_path never returns a save while its write is in flight, and
// does once the write ended and committed; a redo in place is uncommitted at once.
TEST(AsyncSaves, AWriteIsCommittedWhenItEndsNeverBefore) {
  temp_dir t;
  node_state_file node(t / "state");
  controller ctl(one_rank(t));
  t.write("ckpt/step_10/part.0", "half written");
  const std::uint64_t ticket = ctl.save_begin(10, t / "ckpt/step_10");
  EXPECT_EQ(ctl.pending_saves(), 1u);
  const rank_beat* beat = beat_of_me(node.get());
  ASSERT_NE(beat, nullptr);
  EXPECT_EQ(beat->saves.pending.load(), 1);
  EXPECT_EQ(beat->saves.pending_step1.load(), 11);
  EXPECT_GT(beat->saves.pending_ms.load(), 0);
  std::atomic<bool> ending{false}, ended{false};
  std::thread writer([&] {
    std::this_thread::sleep_for(100ms);
    ending = true;
    EXPECT_TRUE(ctl.save_end(ticket));
    ended = true;
  });
  int looks = 0;
  while (!ended) {  // polled while the write is in flight
    const std::string seen = resumed(t);
    // Judged only when the write had not begun to end by the look's end: `ending` read
    // before the look let a commit made during it count as early (seen under load).
    if (!ending.load()) {
      EXPECT_EQ(seen, "(none)") << "committed before its write ended";
    }
    ++looks;
  }
  writer.join();
  EXPECT_GT(looks, 1);
  EXPECT_EQ(resumed(t), "ckpt/step_10");
  EXPECT_EQ(beat->saves.pending.load(), 0);
  EXPECT_EQ(beat->saves.pending_step1.load(), 0);
  EXPECT_EQ(beat->saves.committed_step1.load(), 11);
  // The same step saved again in place: uncommitted from the hand-off to its end.
  const std::uint64_t again = ctl.save_begin(10, t / "ckpt/step_10");
  EXPECT_EQ(resumed(t), "(none)");
  EXPECT_TRUE(ctl.save_end(again));
  EXPECT_EQ(resumed(t), "ckpt/step_10");
  EXPECT_THROW(ctl.save_end(again), std::invalid_argument) << "a ticket ends once";
}

TEST(AsyncSaves, AWriteThatFailsCommitsNothingAndSaysSo) {
  temp_dir t;
  const captured_log log;
  controller ctl(one_rank(t));
  t.write("ckpt/step_10/part.0", "x");
  ctl.saved(10, t / "ckpt/step_10");
  t.write("ckpt/step_20/part.0", "torn");
  const std::uint64_t ticket = ctl.save_begin(20, t / "ckpt/step_20");
  EXPECT_FALSE(ctl.save_end(ticket, "OSError: [Errno 28] No space left on device\nmore"));
  EXPECT_EQ(resumed(t), "ckpt/step_10");
  EXPECT_EQ(ctl.pending_saves(), 0u);
  const std::string lines = log.text();
  EXPECT_NE(lines.find("the save at step 20 (" + (t / "ckpt/step_20") + ") failed "), std::string::npos) << lines;
  EXPECT_NE(lines.find(": OSError: [Errno 28] No space left on device; nothing is committed"), std::string::npos)
      << lines;
  // A write that ended but left nothing at its path is said too, from the writer's thread.
  const std::uint64_t lost = ctl.save_begin(30, t / "ckpt/step_30");
  EXPECT_FALSE(ctl.save_end(lost));
  EXPECT_NE(log.text().find("the save at step 30 ended, but is not committed: saved(): '"), std::string::npos)
      << log.text();
}

// --graceful-exit=auto, the report and the hang clock see the whole write: from the
// save's start (the loop's "save" phase here) to its commit, the blocking part apart.
TEST(AsyncSaves, ASaveCountsFromItsStartToItsCommit) {
  temp_dir t;
  const moved_clock clock;
  node_state_file node(t / "state");
  setenv("SLURM_JOB_ID", "4243", 1);
  setenv("TRAINCTL_RUN_EVENTS_DIR", (t / "runs").c_str(), 1);
  {
    controller ctl(one_rank(t));
    ctl.check(5);
    t.write("ckpt/step_5/part.0", "x");
    ctl.phase_begin("save");
    clock.pass(2s);  // staging: the loop waits
    const std::uint64_t ticket = ctl.save_begin(5, t / "ckpt/step_5");
    ctl.phase_end();
    EXPECT_LT(node.get().longest_save_ms.load(), 3000) << "the blocking part alone, so far";
    ctl.check(6);
    clock.pass(90s);  // the write, while the loop trains on
    ctl.check(7);
    EXPECT_TRUE(ctl.save_end(ticket));
    EXPECT_GE(node.get().longest_save_ms.load(), 92000);
    EXPECT_LT(node.get().longest_save_ms.load(), 95000);
  }
  unsetenv("SLURM_JOB_ID");
  unsetenv("TRAINCTL_RUN_EVENTS_DIR");
  std::string why;
  const auto events = read_run_events(t / "runs/4243", &why);
  ASSERT_EQ(why, "");
  const run_event* saved = nullptr;
  const run_event* commit = nullptr;
  for (const auto& e : events) {
    if (e.what == "saved" && saved == nullptr) saved = &e;
    if (e.what == "commit") commit = &e;
  }
  ASSERT_NE(saved, nullptr);
  ASSERT_NE(commit, nullptr);
  EXPECT_GE(saved->took_ms, 2000);
  EXPECT_LT(saved->took_ms, 3000);
  EXPECT_EQ(commit->step, 5);
  EXPECT_GE(commit->took_ms, 92000);
}

// A decided save handed off to a write: its blocking part ends at the hand-off, and the
// rank is back in training (the hang clock's training budget), not "saving" for minutes.
TEST(AsyncSaves, TheHandOffEndsTheBlockingPartOfADecidedSave) {
  temp_dir t;
  node_state_file node(t / "state");
  config c = one_rank(t);
  c.set("kill_switch", t / "KILL");
  controller ctl(c);
  trainctl_test::touch(t / "KILL");
  decision d;
  for (int s = 0; s < 200 && !d.exit; ++s) {
    d = ctl.check(s);
    if (!d.exit) std::this_thread::sleep_for(10ms);
  }
  ASSERT_TRUE(d.exit);
  const rank_beat* beat = beat_of_me(node.get());
  ASSERT_NE(beat, nullptr);
  EXPECT_EQ(beat->phase.load(), kPhaseSave);
  t.write("ckpt/step_1/part.0", "x");
  const std::uint64_t ticket = ctl.save_begin(1, t / "ckpt/step_1");
  EXPECT_EQ(beat->phase.load(), kPhaseTraining) << "the loop goes on; the write is judged apart";
  EXPECT_TRUE(ctl.save_end(ticket));
}

// A rank ends after its writes, but never past the job's end: 2 s before it, what is
// still being written is said, stays uncommitted, and keeps the rank's beat slot (where
// its supervisor names the cut save).
TEST(AsyncSaves, TheEndWaitsForTheWritesButSaysWhatTheJobsEndWillCut) {
  temp_dir t;
  const captured_log log;
  node_state_file node(t / "state");
  t.write("ckpt/step_40/part.0", "x");
  {
    controller ctl(one_rank(t));
    const std::uint64_t quick = ctl.save_begin(30, t / "ckpt/step_40");
    std::thread writer([&] {
      std::this_thread::sleep_for(100ms);
      ctl.save_end(quick);
    });
    EXPECT_EQ(ctl.wait_for_saves(10), 0u) << "the write ended well within the bound";
    writer.join();
    EXPECT_NE(log.text().find("every one ended"), std::string::npos) << log.text();

    node.get().end_ms.store(unix_now_ms() + 2500);  // EndTime, as a supervisor read it
    ctl.save_begin(40, t / "ckpt/step_40");
    const auto started = std::chrono::steady_clock::now();
    EXPECT_EQ(ctl.wait_for_saves(), 1u);
    const auto waited = std::chrono::steady_clock::now() - started;
    EXPECT_GE(waited, 300ms);
    EXPECT_LT(waited, 2000ms) << "it waited past 2 s before the job's end";
    const std::string lines = log.text();
    EXPECT_NE(lines.find("the save at step 40 (" + (t / "ckpt/step_40") + ") is still being written"),
              std::string::npos)
        << lines;
    EXPECT_NE(lines.find("the job's end cuts it, and it is not committed"), std::string::npos) << lines;
  }
  EXPECT_EQ(resumed(t), "(none)");
  bool kept = false;
  for (const rank_beat& b : node.get().beats)
    kept = kept || (b.pid.load() == getpid() && b.saves.pending.load() == 1 && b.saves.pending_step1.load() == 41);
  EXPECT_TRUE(kept) << "the beat of a rank that ended with a write pending stays for its supervisor";
}

// A marker's name squatted (another user's directory in a shared checkpoint directory):
// that save is not committed, one line says why, and the loop trains on.
TEST(AsyncSaves, ASquattedMarkerNameIsOneLineAndTheLoopTrainsOn) {
  temp_dir t;
  const captured_log log;
  controller ctl(one_rank(t));
  t.write("ckpt/step_10/part.0", "x");
  ASSERT_EQ(mkdir((t / "ckpt/step_10/.trainctl-committed.0").c_str(), 0755), 0);
  EXPECT_FALSE(ctl.saved(10, t / "ckpt/step_10"));
  EXPECT_NE(log.text().find("the save at step 10 is written but not committed: saved(): cannot write"),
            std::string::npos)
      << log.text();
  EXPECT_NE(log.text().find("the loop trains on"), std::string::npos);
  EXPECT_FALSE(ctl.check(11).exit);
  EXPECT_EQ(trainctl_saved(nullptr, 1, "x"), TRAINCTL_EINVAL);
}

// What resume_path could not trust reaches rank 0's first step, where `trainctl report`
// names a task that started fresh although saves existed.
TEST(AsyncSaves, TheFirstStepTellsWhatResumeCouldNotTrust) {
  temp_dir t;
  const captured_log log;
  t.write("ckpt/step_100/model.pt", "saved with no marker");
  EXPECT_EQ(resumed(t), "(none)");
  EXPECT_NE(log.text().find("resume_path(): no save in " + (t / "ckpt") + " to resume from: 1 save is not trusted"),
            std::string::npos)
      << log.text();
  setenv("SLURM_JOB_ID", "4244", 1);
  setenv("TRAINCTL_RUN_EVENTS_DIR", (t / "runs").c_str(), 1);
  {
    controller ctl(one_rank(t));
    ctl.check(0);
  }
  unsetenv("SLURM_JOB_ID");
  unsetenv("TRAINCTL_RUN_EVENTS_DIR");
  std::string why;
  const auto events = read_run_events(t / "runs/4244", &why);
  ASSERT_FALSE(events.empty()) << why;
  EXPECT_EQ(events[0].what, "first_step");
  EXPECT_EQ(events[0].step, 0);
  EXPECT_EQ(events[0].figure("resumed", -1), 0);
  EXPECT_EQ(events[0].figure("untrusted", -1), 1);
}
