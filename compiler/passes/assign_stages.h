// assign_stages: decides for each node whether it runs once (param-init) or
// at every step.
//
// Terms: a node is param-init when it is used, and every use is a param's
// initial-value reference or another param-init node; data, param reads,
// reparametrizations, dropout and marked nodes are always step. So a user's
// initializer subgraph becomes param-init, and if it reads data, the train
// flag or a param's current value, the verifier reports the user's line.
//
// Requires: a graph in topological order.
// Ensures: stages as above, and the stage rules hold: a violation is returned
//   as the user's error (InvalidArgument at their line). Returns whether any
//   stage changed.
#pragma once

#include "absl/status/statusor.h"
#include "ir/graph.h"

namespace retc::passes {

struct AssignStagesOptions {};

absl::StatusOr<bool> assign_stages(ir::Graph& g, const AssignStagesOptions& opts = {});

}  // namespace retc::passes
