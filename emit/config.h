// What every target's config holds besides the model: the training setup
// (datasets, optimizer, schedule: RETURNN options shared by its backends),
// the config options, and the IR hash of the header.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "emit/py_value.h"
#include "ir/dim_table.h"
#include "ir/graph.h"

namespace retc::emit {

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
  /// Further config entries, written last in this order.
  std::vector<std::pair<std::string, PyValue>> extra;
};

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
};

struct ConfigOptions {
  std::string model_name;
  /// RETURNN's `model` prefix for checkpoints, e.g. "work/model/network".
  std::string model_path = "retc-model/network";
  int64_t log_verbosity = 3;
  /// RETURNN's `device`: "cpu" or "gpu".
  std::string device = "cpu";
  TrainingSetup training;
  TaskOptions task;
};

/// The RETURNN behavior_version retc emits for (the newest the pinned RETURNN knows).
inline constexpr int kBehaviorVersion = 38;

/// FNV-1a 64 of the canonical IR text, as 16 hex digits.
std::string ir_hash(const ir::Graph& g);

/// The first lines of every target's config: `#!rnn.py`, that retc made it,
/// the model's name and the IR hash; a blank line.
std::string config_header(const ir::Graph& g, const ConfigOptions& opts);

/// The training setup's entries (datasets, batching, optimizer, schedule,
/// checkpoints, log, extra), the same for every target; `after_seed` are a
/// target's own entries after random_seed (TF: decouple_constraints).
std::string training_entries(const ConfigOptions& opts,
                             const std::vector<std::pair<std::string, PyValue>>& after_seed = {});

/// The config's `beam_size = K` line for search (choices refer to it), else "".
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

}  // namespace retc::emit
