// One run per workdir: an exclusive lock on WORKDIR/retc.lock (flock(2)),
// held while the process lives. The kernel drops it when the process dies,
// however it dies; the file then still names the dead run's PID and machine, and the next
// run takes the lock over with a note. A process killed by SIGKILL lets go of
// it only once the kernel has torn it down, and children forked from it
// without an exec hold it until they end too: a run that finds the lock held
// by a killed, exiting or gone process waits for it (up to 30 s, saying so on
// stderr) instead of calling it another run. (A warm server's child is killed
// when its client is: the next command of a script can start before it has
// ended.)
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace retc::runtime {

class WorkdirLock {
 public:
  /// Takes the lock of `workdir` (which exists) for `what` ("retc train").
  /// FailedPrecondition, in one line naming the PID that holds it, if another
  /// live process does; a killed holder is waited for. `note` is set to a line about a lock left by
  /// a run that ended without releasing it (killed), else cleared.
  static absl::StatusOr<WorkdirLock> acquire(const std::string& workdir, const std::string& what,
                                             std::string& note);

  WorkdirLock(WorkdirLock&& other) noexcept;
  WorkdirLock& operator=(WorkdirLock&&) = delete;
  WorkdirLock(const WorkdirLock&) = delete;
  WorkdirLock& operator=(const WorkdirLock&) = delete;
  /// Removes the lock file and releases the lock.
  ~WorkdirLock();

 private:
  WorkdirLock(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  int fd_ = -1;
  std::string path_;
};

}  // namespace retc::runtime
