#include "emit/file_util.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <utility>

#include "absl/strings/numbers.h"
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

namespace fs = std::filesystem;

absl::Status check_writable(const std::string& path) {
  std::error_code ec;
  if (path.empty()) return absl::InvalidArgumentError("output path is empty");
  if (fs::is_directory(path, ec)) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot write '", path, "': it is a directory (give a file name)"));
  }
  fs::path dir = fs::path(path).parent_path();
  if (dir.empty()) dir = ".";
  if (!fs::is_directory(dir, ec)) {
    return absl::NotFoundError(
        absl::StrCat("cannot write '", path, "': no directory '", dir.string(), "'"));
  }
  if (::access(dir.c_str(), W_OK) != 0) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot write '", path, "': ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

absl::StatusOr<ScratchDir> ScratchDir::beside(const std::string& target) {
  if (absl::Status s = check_writable(target); !s.ok()) return s;
  const fs::path t(target);
  fs::path dir = t.parent_path();
  if (dir.empty()) dir = ".";
  const std::string name = t.filename().string();
  const std::string prefix = absl::StrCat(".", name, ".retc-tmp-");
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string f = e.path().filename().string();
    int pid = 0;
    if (!f.starts_with(prefix) || !absl::SimpleAtoi(f.substr(prefix.size()), &pid) || pid <= 0)
      continue;
    if (::kill(pid, 0) != 0 && errno == ESRCH) fs::remove_all(e.path(), ec);  // a killed run's
  }
  const fs::path path = dir / absl::StrCat(prefix, ::getpid());
  fs::remove_all(path, ec);
  if (!fs::create_directory(path, ec) || ec) {
    return absl::PermissionDeniedError(absl::StrCat("cannot write '", target,
                                                    "': ", ec ? ec.message() : "cannot create ",
                                                    ec ? "" : path.string()));
  }
  return ScratchDir(path.string(), target, name);
}

ScratchDir::ScratchDir(ScratchDir&& other) noexcept
    : path_(std::exchange(other.path_, std::string())),
      target_(std::move(other.target_)),
      name_(std::move(other.name_)) {}

ScratchDir::~ScratchDir() {
  if (path_.empty()) return;
  std::error_code ec;
  fs::remove_all(path_, ec);
}

std::string ScratchDir::file(const std::string& suffix) const {
  return (fs::path(path_) / (name_ + suffix)).string();
}

absl::Status ScratchDir::commit(const std::vector<std::string>& suffixes) const {
  for (const std::string& suffix : suffixes) {
    if (::rename(file(suffix).c_str(), (target_ + suffix).c_str()) != 0) {
      return absl::PermissionDeniedError(
          absl::StrCat("cannot write '", target_ + suffix, "': ", std::strerror(errno)));
    }
  }
  return absl::OkStatus();
}

}  // namespace retc::emit
