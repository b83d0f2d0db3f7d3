// The torch target's config writer: a complete RETURNN config for its
// PyTorch engine (imports, dims, extern_data, the used helpers, the model
// with its param-init stage, train_step or forward_step, the training setup).
// The target's passes: legalize.h, naming.h; its parts: lower.h (one
// expression per node), loops.h (the step code), stages.h, helpers.h.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "emit/config.h"
#include "ir/graph.h"

namespace retc::emit::torch {

/// Requires: a graph after pipeline(torch::target()).
absl::StatusOr<std::string> write_config(const ir::Graph& g, const ConfigOptions& opts);

/// Pretraining stages: the model (get_model) holds the last stage's params
/// throughout; train_step runs the step of the stage that trains the epoch
/// (rf's run context), so a stage starts from the previous one's params.
absl::StatusOr<std::string> write_config(const std::vector<StageGraph>& stages,
                                         const ConfigOptions& opts);

}  // namespace retc::emit::torch
