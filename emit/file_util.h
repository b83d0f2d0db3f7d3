// Atomic file output: nothing is written on error, and a reader never sees a
// half-written file.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace retc::emit {

/// Writes `content` to a temp file beside `path` and renames it over `path`.
/// On failure, removes the temp file and leaves `path` untouched.
absl::Status write_file_atomic(const std::string& path, absl::string_view content);

/// Before a long job writes `path`: an error in one line now, not after the
/// job, if `path` is a directory, or its directory is missing or not writable.
absl::Status check_writable(const std::string& path);

/// A private directory beside `target` (".NAME.retc-tmp-PID" in its directory,
/// the same file system) where a job writes what becomes `target`; commit()
/// renames the files into place. Removed, with anything left in it, when
/// destroyed: on every path, errors and Ctrl-C included. Those of runs that
/// were killed (their PID no longer runs) are removed when the next one for
/// the same target is made.
class ScratchDir {
 public:
  static absl::StatusOr<ScratchDir> beside(const std::string& target);
  ScratchDir(ScratchDir&& other) noexcept;
  ScratchDir& operator=(ScratchDir&&) = delete;
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  ~ScratchDir();

  const std::string& path() const { return path_; }
  /// Where the job writes `target` (+ a suffix): the same name in path().
  std::string file(const std::string& suffix = "") const;
  /// Renames path()/NAME+SUFFIX to TARGET+SUFFIX for each suffix, in order (a
  /// TF checkpoint: the data and meta files first, the index that readers
  /// look for last).
  absl::Status commit(const std::vector<std::string>& suffixes = {""}) const;

 private:
  ScratchDir(std::string path, std::string target, std::string name)
      : path_(std::move(path)), target_(std::move(target)), name_(std::move(name)) {}
  std::string path_, target_, name_;
};

}  // namespace retc::emit
