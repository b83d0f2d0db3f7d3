// dce: dead-code elimination.
//
// Removes every node that no root depends on. Roots are params (their
// variables belong to the checkpoint whether or not the network reads them),
// extern data (the dataset provides it) and marked nodes (outputs, losses).
//
// Requires: a verified graph.
// Ensures: every remaining node is a root or an input, transitively, of a
//   root; relative node order is unchanged. Returns whether it removed any.
#pragma once

#include "absl/status/statusor.h"
#include "ir/graph.h"

namespace retc::passes {

struct DceOptions {};

absl::StatusOr<bool> dce(ir::Graph& g, const DceOptions& opts = {});

}  // namespace retc::passes
