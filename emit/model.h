// ModelDef: a named model (its build function and training setup), and
// build_model, the boundary from model code to the IR. Compiling for a
// target (passes and config) is emit/target.h.
//
// It lives in emit/, not compiler/: the training setup (datasets, optimizer)
// is RETURNN config data shared by every target (emit/config.h), and the
// build function is model code (compiler/nn); emit/ sits above both, so no
// lower folder includes a higher one.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler/nn/builder.h"
#include "emit/config.h"
#include "ir/graph.h"

namespace retc {

struct ModelDef {
  std::string name;
  std::string description;
  /// Declares extern data, sets the root module, runs forward, marks losses
  /// and outputs. Throws nn::ModelError on user errors (build_model catches).
  std::function<void(nn::Builder&)> build;
  emit::TrainingSetup training;
  /// Pretraining stages: the first epoch of each stage after the first, in
  /// increasing order (e.g. {3, 5}: stage 0 trains epochs 1-2, stage 1 epochs
  /// 3-4, stage 2 from epoch 5 on). `build` runs once per stage
  /// (nn::Builder::stage(), epoch()); a stage starts from the previous one's
  /// params by name, and each stage's params are among the last stage's with
  /// the same shapes (the network grows). Empty: one network.
  std::vector<int64_t> stage_epochs;
  /// Files the datasets read (e.g. an audio corpus), checked before RETURNN
  /// runs: a missing one is a one-line error that says `how_to_make` them.
  std::vector<std::string> data_files;
  std::string how_to_make;
};

/// OK, or NotFound naming the first missing data file and how to make it.
absl::Status check_data_files(const ModelDef& def);

/// The stage (an index into {1} + stage_epochs) that trains `epoch`.
int stage_of_epoch(const ModelDef& def, int64_t epoch);

/// The config options `retc compile` uses: the model's training setup, with
/// checkpoints at `model_dir/network` and RETURNN's per-epoch scores in
/// `model_dir/learning_rates` (so a resumed run knows the finished epochs).
emit::ConfigOptions config_options(const ModelDef& def,
                                   const std::string& model_dir = "retc-model");

/// Keeps the marks `task` computes (train, eval: outputs and losses;
/// forward: outputs; search: search outputs), so that DCE keeps only what
/// the task needs (forward needs no targets). FailedPrecondition naming the
/// model if the task has nothing to compute.
absl::Status select_task(ir::Graph& g, emit::Task task, const std::string& model_name);

/// Runs `def.build` into a fresh graph, for pretraining stage `stage` (the
/// last one by default: what inference uses). User errors come back as
/// InvalidArgument with `file:line:col: error: ...`.
absl::StatusOr<ir::Graph> build_model(const ModelDef& def, int stage = -1);

}  // namespace retc
