// RETURNN in process: construct a config's network (check) and train it.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace retc::runtime {

struct Variable {
  std::string name;  ///< TF name, e.g. "lstm/ff_weight/param:0"
  std::vector<int64_t> shape;
};

struct CheckResult {
  std::vector<Variable> variables;
  /// Output layers and the shapes they had on the random batch (TF).
  std::vector<Variable> outputs;
  /// The losses marked in the train step, with their shapes (torch), and
  /// the errors (losses marked as errors: what RETURNN reports, not trains).
  std::vector<Variable> losses, errors;
};

struct TrainResult {
  int64_t last_epoch = 0;
  /// That epoch's scores as RETURNN records them: "dev_error_ce", ...
  std::vector<std::pair<std::string, double>> scores;
};

/// Builds the network of the config at `config_path` with RETURNN
/// (TFNetwork.construct_from_dict), initializes it and runs one step on
/// random data.
///
/// TensorFlow's and Python's own stderr output goes to `log_path` (appended),
/// and so does the full traceback of an error; the status then carries one
/// line, "<what>: <ExceptionType>: <message> (traceback: <log_path>)".
absl::StatusOr<CheckResult> check_config(const std::string& config_path,
                                         const std::string& log_path);

/// The torch target's check: the config's get_model and one train_step (with
/// the backward pass) on random data; `variables` are the state_dict's, and
/// `losses` the losses marked in the step.
absl::StatusOr<CheckResult> check_torch_config(const std::string& config_path,
                                               const std::string& log_path);

/// Where training runs in several processes: torchrun's --nproc-per-node,
/// --nnodes, --node-rank and node 0's HOST:PORT (--master-addr, --master-port).
struct Distributed {
  int64_t nproc = 1;
  int64_t nnodes = 1;
  int64_t node_rank = 0;
  std::string master;
  bool several() const { return nproc > 1 || nnodes > 1; }
};

/// RETURNN's training on the torch engine in several processes under torch's
/// launcher (torchrun): `d.nproc` on this node, standalone or as node
/// `d.node_rank` of `d.nnodes`; the config has `torch_distributed`. Results
/// as for train_config, read from RETURNN's learning-rate file (on node 0;
/// other nodes return none); rank 0 prints the progress lines.
absl::StatusOr<TrainResult> train_distributed_config(const std::string& config_path,
                                                     const Distributed& d,
                                                     const std::string& log_path,
                                                     double progress_seconds = 10);

/// One param of a checkpoint conversion: its TF variable name (without
/// ":0"), its torch state_dict key and its shape.
struct CheckpointParam {
  std::string tf_name, torch_key;
  std::vector<int64_t> shape;
};

/// How a checkpoint is checked against the model's params: a param of the
/// model missing from it is always an error; one of the checkpoint that the
/// model lacks (a checkpoint of a bigger model that contains this one) is an
/// error unless `allow_extra_params` (--allow-extra-params).
struct CheckpointCheck {
  bool allow_extra_params = false;
  /// --preload MODULE=CKPT (forward and search): the params under the module
  /// path come from CKPT, a checkpoint of a model whose root is that module
  /// (e.g. a language model of its own, for shallow fusion): it must hold
  /// exactly those params, named without the module's prefix, with their
  /// shapes (RETURNN's preload_from_files with a prefix).
  std::string preload_module, preload_path;
};

/// The payload of a Cancelled status of a run stopped by a signal: its number
/// ("2": Ctrl-C, "15": SIGTERM); retc exits with 128 + it.
inline constexpr char kSignalPayload[] = "retc/signal";

struct ConvertResult {
  int64_t params = 0, epoch = 0, step = 0;
};

/// Converts the checkpoint `in` of backend `from` ("tf": a TF checkpoint
/// prefix; "torch": a RETURNN torch .pt file) to the other backend's format
/// at `out`, param by param (written under a temporary name, then renamed),
/// after checking it against `params` as `check` says.
absl::StatusOr<ConvertResult> convert_checkpoint(const std::string& from,
                                                 const std::vector<CheckpointParam>& params,
                                                 const CheckpointCheck& check,
                                                 const std::string& in, const std::string& out,
                                                 const std::string& log_path);

/// RETURNN's eval, forward or search `task` (RETURNN's task names) on the config's
/// checkpoint (`load`), after checking that the checkpoint holds `params` and,
/// unless `check` allows them, nothing else (a missing checkpoint or another
/// model's is a one-line error). Search writes
/// its hypotheses to `output` (RETURNN's "py" search output format). The
/// result's scores: eval: RETURNN's, keyed as training records them; search:
/// "seqs", "label_errors", "ref_labels", "seq_errors" against "classes".
absl::StatusOr<TrainResult> run_task_config(const std::string& config_path, const std::string& task,
                                            const std::vector<CheckpointParam>& params,
                                            const CheckpointCheck& check, const std::string& output,
                                            const std::string& log_path);

struct ImportResult {
  int64_t params = 0;
  /// The source's params no retc param took (a decoder left out, an optimizer's).
  std::vector<std::string> unmatched;
};

/// Another tool's checkpoint `in` (`format`: "returnn-tf", a TF checkpoint prefix;
/// "torch-state-dict", a .pt state dict) as retc's params (`params`), named and laid out
/// by the map file `map` (retc_runtime.parse_checkpoint_map), written for the target
/// `to` ("tf", "torch") at `out`: each param matched by exactly one rule, its source
/// there and its shape retc's, else an error naming the first that is not.
absl::StatusOr<ImportResult> import_checkpoint(const std::string& format, const std::string& map,
                                               const std::vector<CheckpointParam>& params,
                                               const std::string& in, const std::string& to,
                                               const std::string& out, const std::string& log_path);

struct ExportResult {
  /// The ONNX graph's inputs and outputs, in order (RETURNN's raw names:
  /// "data", "data:size1", "output", ...), and the opset written.
  std::vector<std::string> inputs, outputs;
  int64_t opset = 0;
  /// ONNX Runtime against the torch forward on other batches: (sequences,
  /// frames of the longest input, max |onnx - torch|) each.
  struct Check {
    int64_t batch = 0, frames = 0;
    double max_diff = 0;
  };
  std::vector<Check> checks;
};

/// Exports the torch forward config's model (its `load` checkpoint, checked
/// against `params` as `check` says) to ONNX at `out` as RETURNN's
/// tools/torch_export_to_onnx.py does: forward_step traced on a random batch,
/// the inputs the step reads and their sizes as inputs, `model_outputs` (and
/// their sizes) as outputs, the batch and dynamic axes dynamic.
absl::StatusOr<ExportResult> export_onnx_config(const std::string& config_path,
                                                const std::vector<CheckpointParam>& params,
                                                const CheckpointCheck& check,
                                                const std::string& out,
                                                const std::string& log_path);

/// The GPUs that `backend` ("tf", "torch") sees on this machine, where RETURNN
/// would run a config without a `device` (a GPU when there is one). With
/// `device` "gpu" and none to use (no GPU, or a TensorFlow without CUDA):
/// FailedPrecondition with the reason in one line, asked before anything is
/// written.
absl::StatusOr<int> usable_gpus(const std::string& backend, const std::string& device);

/// Runs RETURNN's training task on the config (RETURNN logs to stdout, its
/// stderr and any traceback go to `log_path`, as for check_config). Ctrl-C
/// gives a Cancelled status; the last finished epoch's checkpoint stays.
/// During an epoch, a progress line on stdout at most every
/// `progress_seconds` (a bar redrawn in place on a terminal); 0: none.
absl::StatusOr<TrainResult> train_config(const std::string& config_path,
                                         const std::string& log_path, double progress_seconds = 10);

}  // namespace retc::runtime
