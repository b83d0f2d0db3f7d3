// expand_parametrizations: rewrites reparametrized weights into their
// param-init and step subgraphs.
//
// Terms: `weight_norm(v) {axes}` becomes the step subgraph g · v / ‖v‖
// (‖·‖ over `axes`) with a new param g at `<path of v>_g` (dims of v less the
// axes, kind norm-scale, v's trainable and optimizer options), whose initial
// value is the param-init subgraph ‖initial(v)‖; so the effective initial
// weight equals v's own initial value. v keeps its name and initializer.
// `weight_noise(p)` and `weight_dropout(p)` (or `weight_dropout(weight_noise(p))`)
// of a param p stay: each target applies them to the param's value in
// training (TF: the variable's own options; an eager target: at each step).
// Weight dropout of a derived weight (after weight norm, or a second one)
// becomes a `dropout` node over all its dims.
//
// Requires: lower_init ran (v's initial value is a node or a constant).
// Ensures: no weight_norm node is used; weight_dropout reads only a param or
//   a weight_noise of a param; the derived weight is computed once per step,
//   however many nodes read it; nodes are in topological order. Returns
//   whether it rewrote any.
#pragma once

#include "absl/status/statusor.h"
#include "ir/graph.h"

namespace retc::passes {

struct ExpandParametrizationsOptions {};

absl::StatusOr<bool> expand_parametrizations(ir::Graph& g,
                                             const ExpandParametrizationsOptions& opts = {});

}  // namespace retc::passes
