// The writes of this rank's saves that go on after the loop handed them off (an
// asynchronous checkpoint: DCP's async_save, a writer thread): each is committed when it
// ends well, never before, and the rank does not end while one is pending.
//
// Thread-safe: the loop's thread adds a write (save_begin), any thread ends one
// (save_end: a future's callback, a C++ writer thread), and the rank's end waits for
// them. Times are the caller's (steady microseconds), so a test states them.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace trainctl {

struct pending_write {
  std::uint64_t id = 0;
  bool ending = false;  // claimed by its end
  std::int64_t step = -1;
  std::string path;
  std::int64_t began_us = 0;   // the save's start: the decision, the loop's save phase, or the hand-off
  std::int64_t handed_us = 0;  // when the loop handed the write off: the blocking part ends here
};

class pending_writes {
 public:
  // Adds a write; returns its ticket (never 0).
  std::uint64_t add(std::int64_t step, const std::string& path, std::int64_t began_us, std::int64_t handed_us);
  // The write `id`, claimed for its end (its commit goes on while it stays pending, so a
  // wait does not end before the commit does); nullopt when there is no such write, or
  // another end claimed it. Then done(id) removes it.
  std::optional<pending_write> claim(std::uint64_t id);
  void done(std::uint64_t id);
  // The writes pending now, oldest first.
  std::vector<pending_write> list() const;
  std::size_t size() const;
  // Waits until no write is pending, or until now_us() reaches until_us (0: no bound).
  // Returns the writes still pending. now_us is read between waits of at most 100 ms.
  std::vector<pending_write> wait(std::int64_t until_us, const std::function<std::int64_t()>& now_us);

 private:
  mutable std::mutex mu_;
  std::condition_variable ended_;
  std::vector<pending_write> writes_;
  std::uint64_t next_ = 1;
};

}  // namespace trainctl
