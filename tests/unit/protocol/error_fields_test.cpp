// The error a rank dies of, both sides in one test: the rank's excepthook notes it, the
// node's supervisor reads it at the death; a slot claimed again starts without it.
#include "error_fields.hpp"

#include <unistd.h>

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "beat_fields.hpp"

using namespace trainctl;

TEST(ErrorFields, OnePrintableLineAndTheFirstNotedIsKept) {
  auto ns = std::make_unique<node_state>();
  init_header(*ns);
  const int i = beat_fields::claim(*ns, getpid());
  ASSERT_GE(i, 0);
  rank_beat& b = ns->beats[i];
  EXPECT_EQ(error_fields::read(b), "");
  EXPECT_FALSE(error_fields::noted(b));
  error_fields::note(b, "RuntimeError: CUDA error\x1b[31m\tred (train.py:12 in step)\nsecond line");
  EXPECT_EQ(error_fields::read(b), "RuntimeError: CUDA error?[31m?red (train.py:12 in step)");
  error_fields::note(b, "KeyError: a later one");
  EXPECT_EQ(error_fields::read(b), "RuntimeError: CUDA error?[31m?red (train.py:12 in step)") << "the error it dies of";
  beat_fields::release(b);
  ASSERT_EQ(beat_fields::claim(*ns, getpid()), i);
  EXPECT_EQ(error_fields::read(b), "") << "a new process's slot";
  error_fields::note(b, std::string(500, 'x'));
  EXPECT_EQ(error_fields::read(b).size(), static_cast<std::size_t>(kMaxError));
}

TEST(ErrorFields, ALengthNoWriterWroteReadsAsNone) {
  auto ns = std::make_unique<node_state>();
  init_header(*ns);
  rank_beat& b = ns->beats[0];
  b.error_len.store(kMaxError + 1);  // junk over the slot
  EXPECT_EQ(error_fields::read(b), "");
  b.error_len.store(-3);
  EXPECT_EQ(error_fields::read(b), "");
}
