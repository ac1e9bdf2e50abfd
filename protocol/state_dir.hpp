// Where a user's node state lives, and what in it can be trusted (internal to
// protocol/): the state directory's policy is in state_dir.cpp, with the sweep of what
// killed steps left there.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <system_error>

#include "owned_fd.hpp"

namespace trainctl {
namespace state_dir_detail {

std::system_error sys_error(const std::string& what);
std::string user_name(uid_t uid);
// What is wrong with a file or directory another user could have planted; "" if nothing.
std::string untrusted(const struct stat& st, bool dir);
// Opens (creating it 0700 when missing) a directory only this user can add names to;
// throws a runtime_error whose text is one line when it is not such a directory.
owned_fd open_private_dir(const std::string& dir);

// How long a once-claim is kept when its job's end was never seen.
constexpr std::int64_t kOnceKeepS = std::int64_t{7} * 24 * 3600;

}  // namespace state_dir_detail
}  // namespace trainctl
