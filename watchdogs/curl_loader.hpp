// libcurl, opened only when a sink that needs it sends (HTTP for Slack and webhooks,
// SMTP for mail). A check that finds nothing wrong never maps libcurl and the 30-odd
// libraries it pulls in, and starts like a small C program. The types and constants
// come from curl/curl.h; the functions from the libcurl.so.4 found at run time.
#pragma once

#include <curl/curl.h>

#include <string>

namespace trainctl {

struct curl_api {
  CURLcode (*global_init)(long) = nullptr;
  CURL* (*easy_init)() = nullptr;
  void (*easy_cleanup)(CURL*) = nullptr;
  CURLcode (*easy_setopt)(CURL*, CURLoption, ...) = nullptr;
  CURLcode (*easy_perform)(CURL*) = nullptr;
  CURLcode (*easy_getinfo)(CURL*, CURLINFO, ...) = nullptr;
  const char* (*easy_strerror)(CURLcode) = nullptr;
  curl_slist* (*slist_append)(curl_slist*, const char*) = nullptr;
  void (*slist_free_all)(curl_slist*) = nullptr;
};

// The loaded and initialised libcurl (once, thread-safe), or nullptr with `why` saying
// what is missing in one line.
const curl_api* load_curl(std::string* why);

}  // namespace trainctl
