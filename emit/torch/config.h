// The torch target's passes and its config writer (see target.h).
//
// torch-legalize: every node's kind is one this target lowers, and params use
// no option but their initial value; else the user's error at their line,
// naming the target. Changes nothing.
// torch-naming: every node gets a Python name `n<index>_<kind>` (unique; names
// already set are kept). Returns whether it named any.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "emit/config.h"
#include "ir/graph.h"

namespace retc::emit::torch {

absl::StatusOr<bool> legalize(ir::Graph& g);
absl::StatusOr<bool> naming(ir::Graph& g);

/// Requires: a graph after pipeline(torch::target()).
absl::StatusOr<std::string> write_config(const ir::Graph& g, const ConfigOptions& opts);

/// Pretraining stages: the model (get_model) holds the last stage's params
/// throughout; train_step runs the step of the stage that trains the epoch
/// (rf's run context), so a stage starts from the previous one's params.
absl::StatusOr<std::string> write_config(const std::vector<StageGraph>& stages,
                                         const ConfigOptions& opts);

}  // namespace retc::emit::torch
