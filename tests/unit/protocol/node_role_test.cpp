// The publisher election the supervisor and the library's watcher share: one holder per
// node state, a stopped holder taken over, a lost role given up, a private state always
// published, and the holder watched by a pidfd.
#include "node_role.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fixture.hpp"
#include "node_state_file.hpp"
#include "publisher_fields.hpp"

namespace trainctl {
namespace {

using trainctl_test::temp_dir;

TEST(NodeRole, TheFirstTakesTheRoleTheSecondFollows) {
  temp_dir t;
  node_state_file fa(t / "state"), fb(t / "state");
  node_role a(&fa, fa.get(), {}), b(&fb, fb.get(), {});
  const node_role::turn ta = a.look();
  EXPECT_TRUE(ta.took);
  EXPECT_EQ(ta.taken_from, 0);
  EXPECT_TRUE(a.publishes());
  EXPECT_NE(fa.get().published_ms.load(), 0) << "it refreshes the state as it takes the role";
  const node_role::turn tb = b.look();
  EXPECT_FALSE(tb.took);
  EXPECT_FALSE(b.publishes());
  EXPECT_EQ(tb.problem, "") << "a held lock is no problem";
  EXPECT_EQ(b.holder(), getpid());
  EXPECT_EQ(a.holder(), 0) << "the holder follows nobody";
  EXPECT_FALSE(a.look().took) << "a holder takes nothing again";
}

TEST(NodeRole, AStoppedHolderIsTakenOverAndLearnsItLostTheRole) {
  temp_dir t;
  node_state_file fa(t / "state"), fb(t / "state");
  node_role a(&fa, fa.get(), {}), b(&fb, fb.get(), {});
  ASSERT_TRUE(a.look().took);
  fa.get().published_ms.store(unix_now_ms() - 60000);  // a stopped refreshing a minute ago
  const node_role::turn tb = b.look();
  EXPECT_TRUE(tb.took);
  EXPECT_EQ(tb.taken_from, getpid());
  const node_role::turn ta = a.look();
  EXPECT_TRUE(ta.lost);
  EXPECT_FALSE(ta.took) << "b's heartbeat is fresh";
  EXPECT_FALSE(a.publishes());
  EXPECT_FALSE(a.look().lost) << "lost once";
}

TEST(NodeRole, AFollowerWakesWhenTheHoldersHeartbeatWouldGoStale) {
  temp_dir t;
  node_state_file fa(t / "state"), fb(t / "state");
  node_role a(&fa, fa.get(), {}), b(&fb, fb.get(), {});
  ASSERT_TRUE(a.look().took);
  ASSERT_FALSE(b.look().took);
  const std::int64_t now = unix_now_ms();
  fa.get().published_ms.store(now);
  const std::int64_t stale_after = publisher_stale_after_ms(fa.get());
  EXPECT_EQ(b.until_stale(now, std::chrono::milliseconds(60000)).count(), stale_after + 50);
  EXPECT_EQ(b.until_stale(now, std::chrono::milliseconds(1000)).count(), 1000) << "capped";
  EXPECT_EQ(b.until_stale(now + stale_after + 100, std::chrono::milliseconds(1000)).count(), 1000)
      << "already stale and not taken: the caller's own poll";
  EXPECT_EQ(a.until_stale(now, std::chrono::milliseconds(60000)).count(), 60000) << "the holder waits for nobody";
}

TEST(NodeRole, GivingUpLetsAnotherTakeTheRoleAtOnce) {
  temp_dir t;
  node_state_file fa(t / "state"), fb(t / "state");
  node_role a(&fa, fa.get(), {}), b(&fb, fb.get(), {});
  ASSERT_TRUE(a.look().took);
  a.give_up();
  EXPECT_FALSE(a.publishes());
  EXPECT_TRUE(b.look().took);
}

TEST(NodeRole, APrivateStateIsAlwaysPublishedByItsProcess) {
  node_state priv{};
  init_header(priv);
  node_role r(nullptr, priv, {});
  EXPECT_TRUE(r.look().took);
  EXPECT_TRUE(r.publishes());
  EXPECT_EQ(r.holder(), 0);
  EXPECT_EQ(r.rewatch_holder(), -1);
}

TEST(NodeRole, TheHoldersPidfdBecomesReadableWhenItDies) {
  temp_dir t;
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t child = trainctl_test::fork_child();
  ASSERT_GE(child, 0);
  if (child == 0) {
    node_state_file f(t / "state");
    node_role r(&f, f.get(), {});
    const char c = r.look().took ? '1' : '0';
    if (write(ready[1], &c, 1) != 1) _exit(1);
    pause();
    _exit(0);
  }
  char c = 0;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  ASSERT_EQ(c, '1');
  node_state_file f(t / "state");
  node_role me(&f, f.get(), {});
  EXPECT_FALSE(me.look().took);
  EXPECT_EQ(me.holder(), child);
  const int fd = me.rewatch_holder();
  ASSERT_GE(fd, 0);
  EXPECT_EQ(me.rewatch_holder(), -1) << "the same holder: the same pidfd";
  pollfd p{fd, POLLIN, 0};
  EXPECT_EQ(poll(&p, 1, 0), 0) << "alive";
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  EXPECT_EQ(poll(&p, 1, 5000), 1) << "readable when the holder died";
  EXPECT_TRUE(me.look().took) << "the lock went with the holder";
  EXPECT_EQ(me.rewatch_holder(), -1) << "a holder watches nobody";
  close(ready[0]);
  close(ready[1]);
}

}  // namespace
}  // namespace trainctl
