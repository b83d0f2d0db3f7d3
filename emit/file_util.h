// Atomic file output: nothing is written on error, and a reader never sees a
// half-written file.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace retc::emit {

/// Writes `content` to a temp file beside `path` and renames it over `path`.
/// On failure, removes the temp file and leaves `path` untouched.
absl::Status write_file_atomic(const std::string& path, absl::string_view content);

}  // namespace retc::emit
