// What every target's config holds besides the model: the training setup
// (datasets, optimizer, schedule: RETURNN options shared by its backends),
// the config options, and the IR hash of the header.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "emit/py_value.h"
#include "ir/dim_table.h"
#include "ir/graph.h"

namespace retc::emit {

/// RETURNN's learning-rate control: how the learning rate follows the dev
/// scores (returnn/learning_rate_control.py). Written only when not constant.
struct LearningRateControl {
  enum class Kind {
    kConstant,          ///< "constant": `learning_rates`, then `learning_rate`
    kNewbobRelative,    ///< "newbob": decay when the relative improvement < threshold
    kNewbobAbs,         ///< "newbob_abs": decay when the absolute improvement < threshold
    kNewbobMultiEpoch,  ///< "newbob_multi_epoch": compares scores over sub-epochs
  };
  Kind kind = Kind::kConstant;
  /// The factor on a decay (newbob_learning_rate_decay).
  double decay = 0.5;
  /// newbob_relative_error_threshold (newbob, newbob_multi_epoch) or
  /// newbob_error_threshold (newbob_abs).
  double threshold = -0.01;
  /// newbob_multi_epoch: sub-epochs that make one pass over the data
  /// (newbob_multi_num_epochs) and the update interval (0: the same).
  int64_t multi_num_epochs = 5;
  int64_t multi_update_interval = 0;
  /// The learning rate never goes below this (min_learning_rate).
  double min_learning_rate = 0.0;
  /// The relative error is also relative to the learning rate
  /// (learning_rate_control_relative_error_relative_lr).
  bool relative_to_learning_rate = false;
  /// learning_rate_control_min_num_epochs_per_new_lr.
  int64_t min_epochs_per_new_lr = 0;
  /// The score it follows (learning_rate_control_error_measure, e.g.
  /// "dev_score_output"); empty: RETURNN's default (the first dev score).
  std::string error_measure;
};

/// RETURNN's name of the control ("constant", "newbob", ...).
absl::string_view lr_control_name(LearningRateControl::Kind k);

/// `epochs` learning rates from `from` to `to`, evenly spaced (a warm-up for
/// TrainingSetup::learning_rates, as numpy.linspace in the published setups).
std::vector<double> warmup_learning_rates(double from, double to, int64_t epochs);

/// A learning rate over the global train step (RETURNN's dynamic_learning_rate,
/// evaluated at every step on both targets): piecewise linear through the
/// points (steps[i], rates[i]), rates[0] before the first step and the last
/// rate after the last one. The rates are the learning rates themselves (as
/// i6 setups' piecewise-linear schedules), not factors.
struct StepSchedule {
  std::vector<int64_t> steps;  ///< increasing global train steps
  std::vector<double> rates;   ///< non-negative, one per step
  /// A linear warm-up from `start` to `peak` in `warmup` steps, then a linear
  /// decay to `end` at step `total` (e.g. a one-cycle schedule's two halves).
  static StepSchedule warmup_then_decay(double start, double peak, double end, int64_t warmup,
                                        int64_t total);
  /// "STEP:RATE,STEP:RATE,..." (the lr_schedule option), checked as check() does.
  static absl::StatusOr<StepSchedule> parse(absl::string_view text);
  /// InvalidArgument unless the steps increase from >= 0 and the rates are >= 0, one each.
  absl::Status check() const;
};

/// RETURNN's epoch_wise_filter of a dataset dict: for epochs first..last,
/// keep only sequences such that the mean length is at most max_mean_len
/// (OggZipDataset, LibriSpeechCorpus: a curriculum of short sequences first).
struct EpochFilter {
  int64_t first_epoch = 1;
  int64_t last_epoch = 1;
  double max_mean_len = 0.0;
};
/// `{(first, last): {"max_mean_len": n}, ...}`, for `dataset.set("epoch_wise_filter", ...)`.
PyValue epoch_wise_filter(const std::vector<EpochFilter>& filters);

/// Which checkpoints stay (RETURNN's `cleanup_old_models`, run after each
/// epoch): the last `keep_last` epochs', the best `keep_best` of each score
/// RETURNN records (each train and dev loss and error: an epoch best in any
/// one of them stays) and the epochs in `keep`; the rest are deleted, with
/// their optimizer states on torch (`apply_cleanup_old_models_to_optim_states`).
struct CheckpointCleanup {
  int64_t keep_last = 2;
  int64_t keep_best = 4;
  std::vector<int64_t> keep;
};

/// Mixed precision (torch's autocast, RETURNN's `torch_amp`): the step's
/// matmuls and convolutions in a 16-bit float, the params in float32;
/// float16 with loss scaling (RETURNN's GradScaler).
enum class Precision { kFloat32, kBfloat16, kFloat16 };

/// "float32", "bfloat16", "float16".
absl::string_view precision_name(Precision p);

/// How the ranks of several training processes stay in step (RETURNN's
/// `torch_distributed` reduce_type): gradients averaged at every step, or
/// each rank steps alone and the params are averaged every `param_sync_step`
/// steps.
enum class DistributedReduce { kGrad, kParam };

/// How several training processes divide the training data (RETURNN's
/// `torch_distributed` dataset_distribution): each goes through all of it in
/// an order of its own (kRandomSeedOffset, RETURNN's default), or each gets a
/// disjoint shard of every epoch (kShard: the dataset's `_num_shards` and
/// `_shard_index`, the same order on every rank).
enum class DatasetDistribution { kRandomSeedOffset, kShard };

/// How a model is trained: datasets, batching, optimizer, schedule.
struct TrainingSetup {
  PyValue train;  ///< dataset dict, e.g. {"class": "Task12AXDataset", ...}
  PyValue dev;
  int64_t batch_size = 5000;
  int64_t max_seqs = 10;
  /// TF1-native optimizers only ("adam", ...): Keras-3 optimizers do not run
  /// in RETURNN's TF backend.
  PyValue optimizer = PyValue::dict({{"class", "adam"}});
  double learning_rate = 0.01;
  int64_t num_epochs = 5;
  int64_t random_seed = 42;
  /// The learning rates of the first epochs (RETURNN's `learning_rates`),
  /// e.g. warmup_learning_rates(0.0003, 0.0008, 10); after them the control
  /// goes on from the last one (`learning_rate` is the rate without a list).
  std::vector<double> learning_rates;
  LearningRateControl lr_control;
  /// A learning rate per step instead (not with learning_rates or a
  /// learning-rate control other than constant).
  std::optional<StepSchedule> step_schedule;
  /// Each gradient entry clipped to [-c, c] (gradient_clip); 0: off.
  double gradient_clip = 0.0;
  /// The gradients scaled to a global norm of at most this (gradient_clip_global_norm); 0: off.
  double gradient_clip_global_norm = 0.0;
  /// Gaussian noise of this stddev added to each gradient (gradient_noise); 0: off.
  double gradient_noise = 0.0;
  /// Gradients of this many steps summed before an update (accum_grad_multiple_step).
  int64_t accumulate_gradients = 1;
  /// Chunking of training sequences (RETURNN's `chunking`, "size:step" in
  /// frames, e.g. "500:250"); empty: whole sequences.
  std::string chunking;
  /// Training skips sequences longer than this, per data key
  /// (max_seq_length, e.g. {{"classes", 75}}); empty: none.
  std::vector<std::pair<std::string, int64_t>> max_seq_length;
  /// Checkpoints deleted after each epoch but these; unset: every one stays.
  std::optional<CheckpointCleanup> cleanup;
  /// Mixed precision (torch target; TF: an error naming the target).
  Precision amp = Precision::kFloat32;
  /// Processes that load batches beside each training process (torch's
  /// DataLoader num_workers; torch target); 0: the training process does;
  /// unset: none written, RETURNN's default (one, started anew each epoch).
  std::optional<int64_t> data_loader_workers;
  /// Several processes (ConfigOptions::distributed): the reduce type, and for
  /// kParam the steps between param averages.
  DistributedReduce reduce = DistributedReduce::kGrad;
  int64_t param_sync_step = 0;
  DatasetDistribution dataset_distribution = DatasetDistribution::kRandomSeedOffset;
  /// Further config entries, written last in this order.
  std::vector<std::pair<std::string, PyValue>> extra;
};

/// InvalidArgument naming the model and the option when a setup option is
/// out of range (a negative clip, chunking that is not "size:step", ...).
absl::Status check_training_setup(const TrainingSetup& t, absl::string_view model);

/// One pretraining stage of a model: its compiled graph and its first epoch.
struct StageGraph {
  int64_t first_epoch = 1;
  const ir::Graph* graph = nullptr;
};

/// The Python both targets' staged configs share: `_stage_epochs` (each
/// stage's first epoch after the first) and `_stage_of(epoch)`, the stage
/// that trains an epoch, which prints `retc: epoch E: pretraining stage S of N`
/// when the stage changes.
std::string stage_selector(const std::vector<StageGraph>& stages);

/// RETURNN's task: what the config runs.
enum class Task { kTrain, kEval, kForward, kSearch };

/// RETURNN's name of the task: "train", "eval", "forward", "search".
absl::string_view task_name(Task t);

/// What a config runs besides training: a checkpoint on a dataset.
struct TaskOptions {
  Task task = Task::kTrain;
  /// The checkpoint (RETURNN's `load`): TF: the prefix before .index; torch: the .pt file.
  std::string load;
  /// The dataset: its name in RETURNN's reports ("dev", "train", ...) and its dict.
  std::string data_name;
  PyValue data;
  /// Where forward writes its HDF or search its hypotheses (RETURNN's "py" format).
  std::string output_file;
  /// Search: the hypotheses each choice keeps (the config's `beam_size`).
  int64_t beam = 12;
  /// Search: hypotheses ranked by their summed log-probs divided by their
  /// length (RETURNN's ChoiceLayer default, length_normalization), else by
  /// the sums (the config's `length_normalization`).
  bool length_normalization = true;
  /// Forward for an export (`retc export`, torch): every output mark as an
  /// output of its own name, declared in RETURNN's `model_outputs`.
  bool export_outputs = false;
};

struct ConfigOptions {
  std::string model_name;
  /// The model's option values ("blocks=2 dropout=0.1"): the header's
  /// `# options:` line; none when empty.
  std::string model_options;
  /// RETURNN's `model` prefix for checkpoints, e.g. "work/model/network".
  std::string model_path = "retc-model/network";
  int64_t log_verbosity = 3;
  /// RETURNN's `device`: "cpu" or "gpu"; empty: none written, RETURNN picks
  /// (a GPU where there is one, else the CPU).
  std::string device;
  TrainingSetup training;
  TaskOptions task;
  /// Training runs in several processes (RETURNN's `torch_distributed`,
  /// torch target) with this torch.distributed backend ("gloo"; empty:
  /// RETURNN's default, gloo for CPU tensors and nccl for CUDA ones); unset:
  /// one process.
  std::optional<std::string> distributed;
};

/// The RETURNN behavior_version retc emits for (the newest the pinned RETURNN knows).
inline constexpr int kBehaviorVersion = 38;

/// FNV-1a 64 of the canonical IR text, as 16 hex digits.
std::string ir_hash(const ir::Graph& g);

/// The first lines of every target's config: `#!rnn.py`, that retc made it,
/// the model's name, its options' values (if it has options) and the IR
/// hash; a blank line.
std::string config_header(const ir::Graph& g, const ConfigOptions& opts);

/// The training setup's entries (datasets, batching, optimizer, schedule,
/// checkpoints, log, cleanup, extra), the same for every target; `after_seed`
/// are a target's own entries after random_seed (TF: decouple_constraints),
/// `after_log` after the log and cleanup entries (torch: torch_only_entries).
std::string training_entries(const ConfigOptions& opts,
                             const std::vector<std::pair<std::string, PyValue>>& after_seed = {},
                             const std::vector<std::pair<std::string, PyValue>>& after_log = {});

/// Entries only the torch engine has: torch_amp, torch_dataloader_opts,
/// torch_distributed; each with the option that asks for it, so that another
/// target can name it in its error.
struct TorchOnlyEntry {
  std::string option;  ///< e.g. "amp bfloat16" (as the CLI spells it)
  std::string name;
  PyValue value;
};
std::vector<TorchOnlyEntry> torch_only_entries(const ConfigOptions& opts);

/// The config's `device = "..."` line where one is asked for, else "".
std::string device_entry(const ConfigOptions& opts);

/// The config's `beam_size = K` and `length_normalization` lines for search
/// (choices refer to them), else "".
std::string beam_entry(const ConfigOptions& opts);

/// A task's entries after the training setup's: `load` (the checkpoint),
/// eval's `eval_datasets`, then the target's own entries `own`. Nothing for
/// the train task.
std::string task_entries(const ConfigOptions& opts,
                         const std::vector<std::pair<std::string, PyValue>>& own = {});

/// The node of the graph's mark of `kind` named `preferred` if there is one,
/// else of its first mark of `kind`; nullptr if none. (Forward writes the
/// output "output" as RETURNN's TF forward writes its default output layer.)
const ir::Node* first_marked(const ir::Graph& g, ir::Mark::Kind kind,
                             absl::string_view preferred = "");

/// A derived dim as RETURNN's Dim arithmetic on the ids of its operands:
/// `a_dim + b_dim`, `4 * hidden_dim`, `time_dim // 2` (the same for every target).
PyValue derived_dim_value(const ir::DimTable& t, const ir::Dim& d);

/// RETURNN's combine kind of an elementwise binary op, the same in its TF
/// layers and its frontend (`add`, ..., `truediv`, `logical_and`).
absl::string_view combine_kind(ir::BinaryOp op);

/// The sparse dim RETURNN's cast gives (its TF layer and rf.cast alike): an
/// int result keeps the input's, a float one has none. Where that differs
/// from the IR's cast (`out`), a target sets it.
std::optional<ir::Dim> returnn_cast_sparse_dim(const ir::TensorType& in, const ir::TensorType& out);

}  // namespace retc::emit
