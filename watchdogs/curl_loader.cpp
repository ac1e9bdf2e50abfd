#include "curl_loader.hpp"

#include <dlfcn.h>

#include <mutex>

namespace trainctl {

const curl_api* load_curl(std::string* why) {
  static curl_api api;
  static std::string problem;
  static bool ok = false;
  static std::once_flag once;
  std::call_once(once, [] {
    void* h = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) {
      const char* e = dlerror();
      problem = std::string("cannot load libcurl.so.4 (") + (e != nullptr ? e : "?") + "; apt-get install libcurl4)";
      return;
    }
    bool all = true;
    auto get = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(h, name));
      all = all && fn != nullptr;
    };
    get(api.global_init, "curl_global_init");
    get(api.easy_init, "curl_easy_init");
    get(api.easy_cleanup, "curl_easy_cleanup");
    get(api.easy_setopt, "curl_easy_setopt");
    get(api.easy_perform, "curl_easy_perform");
    get(api.easy_getinfo, "curl_easy_getinfo");
    get(api.easy_strerror, "curl_easy_strerror");
    get(api.slist_append, "curl_slist_append");
    get(api.slist_free_all, "curl_slist_free_all");
    if (!all) {
      problem = "libcurl.so.4 lacks a function trainwatch needs";
      return;
    }
    // Never cleaned up: the process ends soon after its last delivery, and
    // curl_global_cleanup at exit would race a delivery thread still out.
    ok = api.global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
    if (!ok) problem = "curl_global_init failed";
  });
  if (why != nullptr) *why = problem;
  return ok ? &api : nullptr;
}

}  // namespace trainctl
