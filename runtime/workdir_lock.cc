#include "runtime/workdir_lock.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
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

// How long a run waits for the lock of a run that was killed (below).
constexpr std::chrono::seconds kEndingRunWait(30);

// This machine's name, as lock files name it.
std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "";
  return name;
}

// Whether the process named by a lock file's text ("retc train m, PID 42 on
// node3") is ending or gone: killed (SIGKILL pending), exiting (PF_EXITING),
// a zombie, or no longer there. A process killed by SIGKILL lets go of its
// files only after the kernel has torn down its memory (a second for a large
// TF process on a loaded machine), and processes forked from it without an
// exec (torch's data loader workers) hold the lock's file until they notice
// and end too: the lock stays held for a while after the run is dead. A live
// holder, or one on another machine (a workdir on a shared file system), is
// another run.
bool holder_is_ending(const std::string& holder) {
  const size_t at = holder.rfind("PID ");
  if (at == std::string::npos) return false;
  const std::string pid_host = holder.substr(at + 4);
  const size_t on = pid_host.find(" on ");
  int pid = 0;
  if (!absl::SimpleAtoi(pid_host.substr(0, on), &pid) || pid <= 0) return false;
  if (on != std::string::npos && pid_host.substr(on + 4) != host_name()) return false;
  std::ifstream stat_file(absl::StrCat("/proc/", pid, "/stat"));
  std::string stat((std::istreambuf_iterator<char>(stat_file)), std::istreambuf_iterator<char>());
  if (stat.empty()) return true;
  // After the command's name in parentheses: state ppid pgrp session tty tpgid flags.
  std::istringstream fields(stat.substr(stat.rfind(')') + 1));
  std::string state, skip;
  unsigned long flags = 0;
  fields >> state;
  for (int i = 0; i < 5; ++i) fields >> skip;
  fields >> flags;
  constexpr unsigned long kExiting = 0x4;  // PF_EXITING
  if (state == "Z" || state == "X" || (flags & kExiting)) return true;
  std::ifstream status(absl::StrCat("/proc/", pid, "/status"));
  for (std::string line; std::getline(status, line);) {
    if (!line.starts_with("SigPnd:") && !line.starts_with("ShdPnd:")) continue;
    unsigned long long pending = 0;
    std::istringstream(line.substr(7)) >> std::hex >> pending;
    if (pending & (1ull << (SIGKILL - 1))) return true;
  }
  return false;
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
    // flock's errno, 0 once held.
    auto try_lock = [fd] { return ::flock(fd, LOCK_EX | LOCK_NB) == 0 ? 0 : errno; };
    if (int err = try_lock(); err != 0) {
      const std::string holder = read_all(fd);
      const bool ending = err == EWOULDBLOCK && holder_is_ending(holder);
      if (ending) {
        // A killed run still letting go: wait for it, not for the user to try again.
        std::cerr << "retc: waiting for the killed run that held '" << workdir << "' (" << holder
                  << ") to end" << std::endl;
        const auto deadline = std::chrono::steady_clock::now() + kEndingRunWait;
        while ((err = try_lock()) == EWOULDBLOCK && std::chrono::steady_clock::now() < deadline)
          std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      if (err != 0) {
        ::close(fd);
        if (err != EWOULDBLOCK) {
          return absl::PermissionDeniedError(
              absl::StrCat("cannot lock '", path, "': ", std::strerror(err)));
        }
        if (ending) {
          return absl::FailedPreconditionError(absl::StrCat(
              "'", workdir, "' is still locked ", kEndingRunWait.count(), " s after its run (",
              holder, ") was killed: a process it started holds '", path,
              "'; end that process, or use another --workdir"));
        }
        return absl::FailedPreconditionError(absl::StrCat(
            "'", workdir, "' is in use by another run (", holder.empty() ? "a process" : holder,
            "); wait for it to end, or use another --workdir"));
      }
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
    const std::string mine = absl::StrCat(what, ", PID ", ::getpid(), " on ", host_name(), "\n");
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
