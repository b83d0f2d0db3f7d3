// tf-legalize: RETURNN-TF's rules that the neutral IR does not have, checked
// with the user's source line before anything is lowered, and the rewrites
// that make a legal graph lowerable.
//
// Rules: a loss that reads a target (cross-entropy, CTC, regression) reads
// extern data as its target and is only marked as a loss, not used further
// (RETURNN's losses are layer options); cross-entropy logits have no feature
// dim besides the classes; a custom loss is marked as a loss; weight decay
// is all coupled or all decoupled (RETURNN's global decouple_constraints);
// weight noise reads a param directly (RETURNN's param_variational_noise);
// a pool's strides are at most its window (tf.nn.pool);
// no module is gradient-checkpointed (nn::checkpoint: a torch-only option).
//
// Rewrites: a `where` none of whose inputs has all of the result's dims gets
// its true branch broadcast (times a constant 1 over the dims it lacks):
// RETURNN's switch cannot broadcast all of its inputs; a pool whose input has
// no dim besides the batch and the pooled axes pools over a channel of size 1
// (RETURNN's pool layer needs one feature dim, and takes a static axis for it
// when there is no other). Returns whether it rewrote any.
//
// Requires: a graph after the neutral pipeline.
#pragma once

#include "absl/status/statusor.h"
#include "ir/graph.h"

namespace retc::emit::tf {

absl::StatusOr<bool> legalize(ir::Graph& g);

}  // namespace retc::emit::tf
