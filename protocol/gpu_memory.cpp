#include "gpu_memory.hpp"
#include "env.hpp"
#include "env_names.hpp"

#include <dlfcn.h>

#include <cstdlib>

namespace trainctl {
namespace {

// The few NVML declarations used, as documented in nvml.h (stable since NVML 5).
using nvml_return = int;
using nvml_device = void*;
struct nvml_memory {
  unsigned long long total, free, used;
};
using init_fn = nvml_return (*)();
using shutdown_fn = nvml_return (*)();
using count_fn = nvml_return (*)(unsigned*);
using by_index_fn = nvml_return (*)(unsigned, nvml_device*);
using meminfo_fn = nvml_return (*)(nvml_device, nvml_memory*);
using uuid_fn = nvml_return (*)(nvml_device, char*, unsigned);

}  // namespace

gpu_memory::gpu_memory(const std::string& library) {
  std::string lib = library;
  if (lib.empty()) {
    lib = env_or(env_var::kTrainctlNvmlLibrary, "libnvidia-ml.so.1");
  }
  handle_ = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle_ == nullptr) {
    const char* err = dlerror();
    why_not_ = err != nullptr ? err : lib + ": cannot be loaded";
    return;
  }
  init_ = dlsym(handle_, "nvmlInit_v2");
  shutdown_ = dlsym(handle_, "nvmlShutdown");
  count_ = dlsym(handle_, "nvmlDeviceGetCount_v2");
  by_index_ = dlsym(handle_, "nvmlDeviceGetHandleByIndex_v2");
  meminfo_ = dlsym(handle_, "nvmlDeviceGetMemoryInfo");
  if (init_ == nullptr || shutdown_ == nullptr || count_ == nullptr || by_index_ == nullptr || meminfo_ == nullptr) {
    why_not_ = lib + " lacks the NVML functions trainctl uses";
  } else if (reinterpret_cast<init_fn>(init_)() != 0) {
    why_not_ = "nvmlInit_v2 failed (no NVIDIA driver loaded?)";
  } else {
    return;
  }
  dlclose(handle_);
  handle_ = nullptr;
}

gpu_memory::~gpu_memory() {
  if (handle_ == nullptr) return;
  reinterpret_cast<shutdown_fn>(shutdown_)();
  dlclose(handle_);
}

std::optional<gpu_reading> gpu_memory::read() const {
  if (handle_ == nullptr) return std::nullopt;
  unsigned count = 0;
  if (reinterpret_cast<count_fn>(count_)(&count) != 0 || count == 0) return std::nullopt;
  std::optional<gpu_reading> least;
  for (unsigned i = 0; i < count; ++i) {
    nvml_device dev = nullptr;
    nvml_memory mem{};
    if (reinterpret_cast<by_index_fn>(by_index_)(i, &dev) != 0) continue;
    if (reinterpret_cast<meminfo_fn>(meminfo_)(dev, &mem) != 0) continue;
    if (!least || mem.free < least->free) least = gpu_reading{mem.free, mem.total, i};
  }
  return least;
}

std::string gpu_memory::uuids() const {
  if (handle_ == nullptr) return "";
  auto uuid = reinterpret_cast<uuid_fn>(dlsym(handle_, "nvmlDeviceGetUUID"));
  unsigned count = 0;
  if (uuid == nullptr || reinterpret_cast<count_fn>(count_)(&count) != 0) return "";
  std::string out;
  for (unsigned i = 0; i < count; ++i) {
    nvml_device dev = nullptr;
    char buf[96] = {};
    if (reinterpret_cast<by_index_fn>(by_index_)(i, &dev) != 0 || uuid(dev, buf, sizeof buf - 1) != 0) continue;
    out += (out.empty() ? "" : ",") + std::string(buf);
  }
  return out;
}

std::string gpu_uuids() { return gpu_memory().uuids(); }

bool gpu_crossed(const gpu_reading& r, const threshold& t) {
  switch (t.type) {
    case threshold::kind::percent:
      return r.total != 0 && 100.0 * static_cast<double>(r.free) / static_cast<double>(r.total) < t.percent;
    case threshold::kind::bytes:
      return r.free < t.bytes;
    case threshold::kind::none:
      break;
  }
  return false;
}

}  // namespace trainctl
