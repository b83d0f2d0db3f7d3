// Static cost of a model from its IR, before anything runs (`retc stats`):
// params, floating-point operations and the activations a training step
// keeps for its backward pass, per module, as XLA's HloCostAnalysis gives a
// compiled graph's cost. Read it to size a model before a GPU job.
//
// Dims first get sizes: the batch and the data's dynamic dims are given
// (CostOptions), a dim a node makes (a strided conv's or pool's frames, a
// pad's, a concat's) follows from its input's size; a dynamic dim nothing
// determines (a decoder's labels, a repeat's output) takes the data's frames
// unless named in CostOptions::dims, and the result lists it as assumed.
//
// Counting (the method the benchmark's roofline states):
// - A contraction (dot, conv, transposed conv, the products inside
//   self_attention and lstm) costs 2 FLOPs per multiply-add:
//   2 * |output| * |contracted dims|, as torch.profiler's with_flops counts
//   matmuls and convolutions. Its backward costs the same once for each
//   operand that needs a gradient (the activation's, the weight's).
// - Any other op costs a small fixed number of FLOPs per element (1 for
//   elementwise arithmetic; softmax 3, layer norm 5, ...), backward as much
//   again where a gradient flows; views, copies and gathers cost none.
// - Nodes in a loop count once per frame of the loop's axis; only step nodes
//   count (param-init runs once, not per step).
// - A graph without a loss (eval, forward, search) has no backward pass and
//   keeps no activations for one.
// - Activation memory: the bytes of the values the backward pass reads (a
//   matmul's operands, a softmax's output, a dropout's mask, a CTC loss's
//   forward variables, ...), each value once, a view counted with what it
//   views; params are not activations. A gradient-checkpointed module keeps
//   only its inputs, and its backward computes its forward again.
// Checked against torch (tests/integration/test_stats.py): FLOPs against
// torch.profiler's with_flops count, activations against the tensors
// autograd saves. (The profiler does not see inside torch's LSTM kernel.)
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/graph.h"

namespace retc {

struct CostOptions {
  int64_t batch = 1;
  /// The size of every dynamic dim of the data (extern data) and of dynamic
  /// dims nothing determines, unless named in `dims`.
  int64_t frames = 1000;
  /// Sizes by dim name (e.g. {"labels", 60}); they win over the rules above.
  std::map<std::string, int64_t> dims;
};

/// The cost of one module (its nodes and those of its submodules).
struct ModuleCost {
  std::string path;  ///< dotted; "" for the whole model
  int depth = 0;     ///< number of path components
  int64_t params = 0;
  double forward_flops = 0;   ///< one forward pass over the batch
  double backward_flops = 0;  ///< its backward pass
  double activation_bytes = 0;
};

struct CostReport {
  /// The whole model first, then every module in depth-first path order.
  std::vector<ModuleCost> modules;
  /// The frames everything is divided by for per-frame figures:
  /// batch * the size of the input's first dynamic dim.
  int64_t input_frames = 1;
  /// Dynamic dims whose size was assumed (none of the rules gave one), with
  /// that size: "name=size".
  std::vector<std::string> assumed;
  /// Node kinds whose cost is not known (raw RETURNN layers): counted as 0.
  std::vector<std::string> uncounted;
};

/// The cost of `g` (after the passes of a task; its step nodes count).
absl::StatusOr<CostReport> analyze_cost(const ir::Graph& g, const CostOptions& opts);

}  // namespace retc
