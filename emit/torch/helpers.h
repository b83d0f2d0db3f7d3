// The torch target's Python helpers (helpers.py, embedded at build time):
// each top-level definition is copied into a config that calls it.
#pragma once

#include <string>

#include "absl/strings/string_view.h"

namespace retc::emit::torch {

/// The helpers that `code` calls, and those they call, in helpers.py's
/// order, each after a blank line: a config carries no helper it does not use.
std::string used_helpers(absl::string_view code);

}  // namespace retc::emit::torch
