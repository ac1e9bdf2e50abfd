// A file descriptor that closes itself: move-only, -1 when it holds none.
#pragma once

#include <unistd.h>

#include <utility>

namespace trainctl {

class owned_fd {
 public:
  owned_fd() = default;
  explicit owned_fd(int fd) noexcept : fd_(fd) {}
  owned_fd(owned_fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  owned_fd& operator=(owned_fd&& o) noexcept {
    if (this != &o) reset(std::exchange(o.fd_, -1));
    return *this;
  }
  owned_fd(const owned_fd&) = delete;
  owned_fd& operator=(const owned_fd&) = delete;
  ~owned_fd() { reset(); }

  int get() const noexcept { return fd_; }
  explicit operator bool() const noexcept { return fd_ >= 0; }
  // Closes what it held (a close error is not reported: the descriptor is gone either way).
  void reset(int fd = -1) noexcept {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }
  int release() noexcept { return std::exchange(fd_, -1); }

 private:
  int fd_ = -1;
};

}  // namespace trainctl
