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
#include "emit/options.h"
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
  /// Typed options (emit/options.h), set with `--set NAME=VALUE` on every
  /// command: the model's sizes and its training setup's main numbers.
  std::vector<ModelOption> options;
  /// Makes the model for its options' values: sets `build`, `training` (and
  /// whatever else depends on them) in the copy it gets. Runs once per set
  /// of values (with_options); empty for a model without options.
  std::function<void(ModelDef&, const OptionValues&)> configure;
  /// The values `configure` ran with (every option, declaration order): the
  /// config header's `# options:` line.
  OptionValues option_values;
};

/// `def` made for its options set by `settings` ("NAME=VALUE", as `--set`
/// takes them; the defaults for the rest): its `configure` runs on a copy,
/// and the values become the options' defaults (so `with_options(m,
/// {"epochs=4"})` is a model like m with 4 epochs by default). With the
/// values `def` was made with, `def` itself. InvalidArgument naming the
/// option and what it takes for a wrong name, type or range; Internal if the
/// model's configure reads an option it does not declare.
absl::StatusOr<ModelDef> with_options(const ModelDef& def,
                                      const std::vector<std::string>& settings = {});

/// A model made from `def` and changed by `change` (its name, a dataset
/// option, ...), also each time it is made again for other option values:
/// `change` runs after `configure`. (A change made to a ModelDef by hand would
/// be lost when `--set` makes it again.)
ModelDef derive(ModelDef def, std::function<void(ModelDef&)> change);

/// `def` made with its options' defaults: what a model's factory function
/// returns, so that its `build` and `training` are ready to use. Aborts with
/// the message if `configure` fails (a bug of the model, not of its user).
ModelDef configured(ModelDef def);

/// The options most training setups share, their defaults from `t`:
/// learning_rate, epochs, batch_size (and max_seqs).
std::vector<ModelOption> training_options(const emit::TrainingSetup& t);
/// Sets `t` from the values of training_options.
void apply_training_options(const OptionValues& o, emit::TrainingSetup& t);

/// The option `warmup_epochs` (0: none): a linear warm-up of the learning
/// rate from `from` (its help says from what) to the learning rate.
ModelOption warmup_option(int64_t epochs, absl::string_view from);
/// Sets t.learning_rates from warmup_epochs: `from` to t.learning_rate.
void apply_warmup(const OptionValues& o, double from, emit::TrainingSetup& t);

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
