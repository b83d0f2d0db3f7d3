// torch-naming: every node gets a Python name `n<index>_<kind>` (unique;
// names already set are kept).
//
// Ensures: every node has a name. Returns whether it named any.
#pragma once

#include "absl/status/statusor.h"
#include "ir/graph.h"

namespace retc::emit::torch {

absl::StatusOr<bool> naming(ir::Graph& g);

}  // namespace retc::emit::torch
