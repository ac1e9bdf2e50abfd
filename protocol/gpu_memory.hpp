// Free GPU memory through NVIDIA's NVML, loaded with dlopen at run time so that
// trainctl has no build or install dependency on it. Absent NVML means "no reading".
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "parse.hpp"

namespace trainctl {

struct gpu_reading {
  std::uint64_t free = 0;   // the least free memory over the visible devices
  std::uint64_t total = 0;  // that device's total
  unsigned device = 0;
};

class gpu_memory {
 public:
  // `library` defaults to libnvidia-ml.so.1 (TRAINCTL_NVML_LIBRARY overrides it).
  explicit gpu_memory(const std::string& library = "");
  ~gpu_memory();
  gpu_memory(const gpu_memory&) = delete;
  gpu_memory& operator=(const gpu_memory&) = delete;

  bool available() const { return handle_ != nullptr; }
  // Why it is not available: "libnvidia-ml.so.1: cannot open shared object file".
  const std::string& why_not() const { return why_not_; }
  std::optional<gpu_reading> read() const;
  // The visible devices' UUIDs ("GPU-8f2e...,GPU-..."); "" without NVML.
  std::string uuids() const;

 private:
  void* handle_ = nullptr;
  std::string why_not_;
  // NVML entry points, typed in the .cpp.
  void* init_ = nullptr;
  void* shutdown_ = nullptr;
  void* count_ = nullptr;
  void* by_index_ = nullptr;
  void* meminfo_ = nullptr;
};

bool gpu_crossed(const gpu_reading& r, const threshold& t);

// The UUIDs of the GPUs this process sees, for reports ("" without NVML).
std::string gpu_uuids();

}  // namespace trainctl
