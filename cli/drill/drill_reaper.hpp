// What cancels the drill's array when the drill itself cannot: a process of its own,
// forked before sbatch runs, in a session of its own and deaf to the terminal's and the
// drill's signals, waiting on a pipe from the drill. The drill says that it submits, then
// the array's id, then that it is done (it cancelled its array itself). When the pipe
// closes before "done" (the drill killed by SIGKILL, or gone with its terminal), the
// reaper cancels the array; when the drill died while sbatch had not answered, the
// drill's job name of this user (what sbatch may have queued).
#pragma once

#include <sys/types.h>

#include <string>

namespace trainctl::commands {

class drill_reaper {
 public:
  // `job_name`: the drill's --job-name, `user`: this user's name or uid (for the case above).
  drill_reaper(const std::string& job_name, const std::string& user);
  drill_reaper(const drill_reaper&) = delete;
  drill_reaper& operator=(const drill_reaper&) = delete;
  ~drill_reaper();  // without done(): as if the drill died (the reaper cancels)

  void submitting();                     // sbatch is about to run
  void array_is(const std::string& id);  // sbatch gave the array's id
  void done();                           // nothing is left to cancel: the reaper ends
  bool running() const { return pid_ > 0; }

 private:
  void say(const std::string& line);
  int fd_ = -1;
  pid_t pid_ = 0;
};

}  // namespace trainctl::commands
