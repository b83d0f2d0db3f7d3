#include "emit/file_util.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"

namespace retc::emit {

absl::Status write_file_atomic(const std::string& path, absl::string_view content) {
  if (path.empty()) return absl::InvalidArgumentError("output path is empty");
  std::string tmp = absl::StrCat(path, ".tmp.", ::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot write '", path, "': ", std::strerror(errno)));
  }
  size_t done = 0;
  while (done < content.size()) {
    ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      return absl::InternalError(absl::StrCat("cannot write '", path, "': ", std::strerror(err)));
    }
    done += static_cast<size_t>(n);
  }
  int synced = ::fsync(fd);
  int err = errno;
  int closed = ::close(fd);
  if (closed != 0 && synced == 0) err = errno;
  if (synced != 0 || closed != 0) {
    ::unlink(tmp.c_str());
    return absl::InternalError(absl::StrCat("cannot write '", path, "': ", std::strerror(err)));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return absl::PermissionDeniedError(
        absl::StrCat("cannot write '", path, "': ", std::strerror(err)));
  }
  return absl::OkStatus();
}

}  // namespace retc::emit
