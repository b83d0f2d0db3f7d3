// Loop structure as one analysis, derived from dataflow: the IR is flat (no
// nested regions). loop_unstack and loop_state nodes open their loop (attr
// `loop`), a node reading a loop's values is computed in that loop,
// loop_next gives a state its next value, and loop_stack nodes (outside the
// loop) stack a value's frames. The Builder applies node_loop as nodes are
// added, the verifier runs analyze_loops, and every target lowers loops from
// a LoopAnalysis.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/graph.h"

namespace retc::ir {

struct Loop {
  /// The dim the loop runs over (from its first unstack, state or stack node).
  std::optional<Dim> axis;
  /// The nodes computed in the loop, in graph order.
  std::vector<NodeId> members;
  /// A loop over a new axis: its loop_end node (the end condition and the
  /// maximal length); invalid for a loop over an existing axis.
  NodeId end;
  /// Its choice node (beam search), if any: at most one per loop.
  NodeId choice;
};

struct LoopAnalysis {
  /// Which loop each node is computed in; -1: outside every loop (loop_stack
  /// nodes are outside).
  std::vector<int32_t> loop_of;
  /// For each loop_state node its one loop_next node; invalid for other nodes.
  std::vector<NodeId> next_of_state;
  /// Whether a node's frames are stacked (some loop_stack reads it).
  std::vector<bool> stacked;
  /// By loop id (the `loop` attribute); ids without nodes have no axis.
  std::vector<Loop> loops;
};

/// The loops of `g`. Errors (with the node's source line): a node mixing two
/// loops, nested loops, stacking a value of another loop, a state without
/// exactly one loop_next.
absl::StatusOr<LoopAnalysis> analyze_loops(const Graph& g);

/// The loop a new node of `kind` is in, given the loops of the nodes before
/// it (`loop`, indexed by node): the rule analyze_loops applies per node.
absl::StatusOr<int32_t> node_loop(NodeKind kind, const Attrs& attrs,
                                  const std::vector<NodeId>& inputs,
                                  const std::vector<int32_t>& loop);

}  // namespace retc::ir
