#include "runtime/workdir_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace retc::runtime {
namespace {

std::string read_all(int fd) {
  std::string text;
  char buf[256];
  ::lseek(fd, 0, SEEK_SET);
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) text.append(buf, static_cast<size_t>(n));
  return std::string(absl::StripAsciiWhitespace(text));
}

}  // namespace

absl::StatusOr<WorkdirLock> WorkdirLock::acquire(const std::string& workdir,
                                                 const std::string& what, std::string& note) {
  note.clear();
  const std::string path = workdir + "/retc.lock";
  // A run that ends removes the file while it holds the lock: the lock taken
  // on a file that is no longer at `path` is taken again, on the new one.
  for (int attempt = 0; attempt < 100; ++attempt) {
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
      return absl::PermissionDeniedError(
          absl::StrCat("cannot create the lock file '", path, "': ", std::strerror(errno)));
    }
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      const std::string holder = read_all(fd);
      ::close(fd);
      if (err != EWOULDBLOCK) {
        return absl::PermissionDeniedError(
            absl::StrCat("cannot lock '", path, "': ", std::strerror(err)));
      }
      return absl::FailedPreconditionError(absl::StrCat(
          "'", workdir, "' is in use by another run (", holder.empty() ? "a process" : holder,
          "); wait for it to end, or use another --workdir"));
    }
    struct stat held {
    }, now{};
    if (::fstat(fd, &held) != 0 || ::stat(path.c_str(), &now) != 0 || held.st_ino != now.st_ino ||
        held.st_dev != now.st_dev) {
      ::close(fd);
      continue;
    }
    const std::string previous = read_all(fd);
    if (!previous.empty()) {
      note = absl::StrCat("took over the lock of '", workdir, "' left by a run that ended without ",
                          "releasing it (", previous, ")");
    }
    const std::string mine = absl::StrCat(what, ", PID ", ::getpid(), "\n");
    if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, mine.data(), mine.size(), 0) < 0) {
      ::close(fd);
      return absl::PermissionDeniedError(
          absl::StrCat("cannot write the lock file '", path, "': ", std::strerror(errno)));
    }
    return WorkdirLock(fd, path);
  }
  return absl::UnavailableError(absl::StrCat("cannot lock '", path, "': it keeps being replaced"));
}

WorkdirLock::WorkdirLock(WorkdirLock&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), path_(std::move(other.path_)) {}

WorkdirLock::~WorkdirLock() {
  if (fd_ < 0) return;
  ::unlink(path_.c_str());  // while still held: the next run locks a new file
  ::close(fd_);
}

}  // namespace retc::runtime
