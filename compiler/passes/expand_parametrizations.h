// expand_parametrizations: rewrites reparametrized weights into their
// param-init and step subgraphs.
//
// Terms: `weight_norm(v) {axes}` becomes the step subgraph g · v / ‖v‖
// (‖·‖ over `axes`) with a new param g at `<path of v>_g` (dims of v less the
// axes, kind norm-scale, v's trainable and optimizer options), whose initial
// value is the param-init subgraph ‖initial(v)‖; so the effective initial
// weight equals v's own initial value. v keeps its name and initializer.
// `weight_dropout(w)` and `weight_noise(w)` of a param become the param's
// `dropout` / `noise` options (RETURNN's exact `param_dropout` /
// `param_variational_noise`, applied in training only); weight dropout of a
// derived weight becomes a `dropout` node.
//
// Requires: lower_init ran (v's initial value is a node or a constant).
// Ensures: no weight_norm, weight_dropout or weight_noise node is used; the
//   derived weight is computed once per step, however many nodes read it;
//   nodes are in topological order. Returns whether it rewrote any.
#pragma once

#include "absl/status/statusor.h"
#include "ir/graph.h"

namespace retc::passes {

struct ExpandParametrizationsOptions {};

absl::StatusOr<bool> expand_parametrizations(ir::Graph& g,
                                             const ExpandParametrizationsOptions& opts = {});

}  // namespace retc::passes
