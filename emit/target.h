// The target boundary. A target is a name, its passes (run after the neutral
// pipeline: legalize, naming) and its emitter (the complete config). Its
// runner (check, train) is in runtime/; runtime/backends.h lists each target
// with its runner in one plain table. Everything above this boundary (ir/,
// compiler/) names no RETURNN layer, TF variable or backend-only option.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "compiler/pipeline.h"
#include "emit/config.h"
#include "emit/model.h"
#include "ir/graph.h"

namespace retc::emit {

struct Target {
  /// The --backend name: "tf".
  absl::string_view name;
  absl::string_view summary;
  /// Run after the neutral passes; the emitter requires all of them.
  std::vector<PassInfo> passes;
  /// The complete config of a graph after pipeline(*this). User errors are
  /// the legalize pass's; an error here is internal.
  std::function<absl::StatusOr<std::string>(const ir::Graph&, const ConfigOptions&)> write_config;
  /// The config of a model with pretraining stages (in order, the first
  /// starting at epoch 1; the last is the one write_config would write):
  /// training picks each epoch's stage.
  std::function<absl::StatusOr<std::string>(const std::vector<StageGraph>&, const ConfigOptions&)>
      write_staged_config;
};

/// The whole pipeline for `target`: the neutral passes, then the target's.
std::vector<const PassInfo*> pipeline(const Target& target);

/// build_model + select_task + run_passes(pipeline(target)), for
/// pretraining stage `stage` (default: the last).
absl::StatusOr<ir::Graph> compile_model(const ModelDef& def, const Target& target,
                                        Task task = Task::kTrain, int stage = -1);

/// compile_model for forward with only the output marks named in `outputs`
/// (each must be one), the rest of the model removed with the other marks.
absl::StatusOr<ir::Graph> compile_outputs(const ModelDef& def, const Target& target,
                                          const std::vector<std::string>& outputs);

/// compile_model (for opts.task.task) + target.write_config. Training a
/// model with pretraining stages compiles each stage (their params must be
/// among the last stage's, with the same shapes) for write_staged_config.
absl::StatusOr<std::string> compile_to_config(const ModelDef& def, const Target& target,
                                              const ConfigOptions& opts);

/// An internal error for a node kind that `target` cannot lower at this
/// point (e.g. a parametrization that expand-parametrizations rewrites):
/// names the kind and the target.
absl::Status unlowerable(const Target& target, const ir::Node& n, absl::string_view why);

}  // namespace retc::emit
