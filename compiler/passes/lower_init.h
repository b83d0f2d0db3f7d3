// lower_init: turns each param's initializer into a param-init subgraph.
//
// Terms: a random initializer (variance scaling, normal, uniform) becomes a
// `random` node of stage param-init with the exact distribution parameters
// (fans computed here, TF's convention) and a seed derived from the param's
// path alone, so a param's initial value does not depend on which other
// params or layers exist. A user's subgraph initializer is referenced as is.
// Constants stay plain values (a target writes them as such, TF: `init`).
//
// Requires: a verified graph.
// Ensures: every param with a random or subgraph initializer has
//   options.init_node set. Returns whether it set any.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "ir/graph.h"

namespace retc::passes {

struct LowerInitOptions {};

absl::StatusOr<bool> lower_init(ir::Graph& g, const LowerInitOptions& opts = {});

/// The seed of a param's random initial value: FNV-1a of its path, 31 bits.
int64_t init_seed(const std::string& path);

}  // namespace retc::passes
