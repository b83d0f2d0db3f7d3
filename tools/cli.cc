#include "tools/cli.h"

#include <signal.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "compiler/cost.h"
#include "compiler/pipeline.h"
#include "emit/file_util.h"
#include "emit/target.h"
#include "emit/torch/legalize.h"
#include "ir/diagnostic.h"
#include "ir/dot.h"
#include "ir/json.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "nlohmann/json.hpp"
#include "runtime/backends.h"
#include "runtime/python_env.h"
#include "runtime/server.h"
#include "runtime/workdir_lock.h"

namespace retc {
namespace {

constexpr int kOk = 0;
constexpr int kError = 1;
constexpr int kUsage = 2;
constexpr int kInterrupted = 130;

struct Command {
  std::string name;
  std::string usage;
  std::string help;
};

// The production options' usage and help, for compile and train.
constexpr absl::string_view kProductionUsage =
    "                  [--amp bfloat16|float16|off] [--keep-last N] [--keep-best N]\n"
    "                  [--keep-epochs E,E,...] [--workers N] [--reduce grad|param]\n"
    "                  [--param-sync-step N] [--dataset-distribution shard|random_seed_offset]\n"
    "                  [--log-verbosity N]";
constexpr absl::string_view kProductionHelp =
    "Production options (they override the model's training setup):\n"
    "  --amp bfloat16|float16|off  mixed precision (torch: torch_amp; float16 with loss\n"
    "                   scaling); the tf target has none: an error naming it.\n"
    "  --keep-last N, --keep-best N, --keep-epochs E,...  which checkpoints stay after each\n"
    "                   epoch (RETURNN's cleanup_old_models: the last N, the best N of each\n"
    "                   score RETURNN records, the listed epochs; torch: their optimizer\n"
    "                   states too). Without them every checkpoint stays.\n"
    "  --workers N      data-loader processes beside each training process (torch; 0: the\n"
    "                   training process loads). Default: 0 where training runs on the CPU\n"
    "                   (RETURNN's worker is started anew each epoch and competes for the\n"
    "                   cores), else RETURNN's default (1).\n"
    "  --reduce grad|param, --param-sync-step N  several processes (torch): gradients\n"
    "                   averaged every step (grad, default), or params every N steps.\n"
    "  --dataset-distribution shard|random_seed_offset  several processes (torch): each gets\n"
    "                   a disjoint shard of every epoch, or all the data in an order of its\n"
    "                   own (RETURNN's default).\n"
    "  --log-verbosity N  RETURNN's log_verbosity (0-5, default 3).";

const std::vector<Command>& commands() {
  static const std::vector<Command> kCommands = {
      {"list", "list [--options MODEL] [--json]",
       "Lists the models this binary knows, with a description. --options MODEL lists the\n"
       "options of MODEL: each with its default, what it takes and a line of help. --json:\n"
       "every model with its options as JSON (what the Python package reads)."},
      {"compile",
       absl::StrCat(
           "compile MODEL -o FILE [--backend NAME] [--model-dir DIR] [--epochs N]\n"
           "                  [--device auto|cpu|gpu] [--seed N] [--task TASK] [--beam K]\n"
           "                  [--length-norm on|off] [--set NAME=VALUE]\n"
           "                  [--distributed]\n",
           kProductionUsage),
       absl::StrCat(
           "Compiles MODEL to a complete RETURNN config at FILE (written atomically; nothing is\n"
           "written on error). --model-dir sets where RETURNN keeps checkpoints (default\n"
           "retc-model, relative to where RETURNN runs); --epochs overrides the number of epochs;\n"
           "--seed sets the config's random_seed (fresh random numbers, data order; default 42).\n"
           "--device: RETURNN's device, written into the config as asked (auto, the default: none\n"
           "written, RETURNN takes a GPU where there is one), for wherever the config will run.\n"
           "--task eval|forward|search writes the config that task runs on the dev set (as\n"
           "`retc eval/forward/search` does, without a checkpoint to load; search: --beam K,\n"
           "default 12, and --length-norm); default train.\n"
           "--backend picks the target (default tf: RETURNN's TensorFlow net-dict backend).\n"
           "--distributed (torch): the config trains in several processes under torch's launcher\n"
           "(torchrun ... -m returnn FILE, as `retc train --nproc/--nnodes` runs it): RETURNN's\n"
           "torch_distributed, gloo with --device cpu (which RETURNN then needs), else RETURNN's\n"
           "default (nccl for CUDA tensors).\n",
           kProductionHelp)},
      {"check", "check MODEL [--backend NAME] [--batch B] [--time T] [--set NAME=VALUE]",
       "Compiles MODEL, constructs its network in RETURNN (tf: TFNetwork.construct_from_dict;\n"
       "torch: the config's get_model), runs one step on random data (torch: train_step and\n"
       "the backward pass) and prints every variable with its name and shape. The random\n"
       "batch has B sequences (default 3); the first dynamic dim of the input has lengths\n"
       "T-2 to T (default 7; e.g. --time 1600 for a model that reads raw audio), later ones\n"
       "(targets) are short.\n"
       "Fails if RETURNN's variables differ from the model's named parameters.\n"
       "TensorFlow's stderr and any traceback go to $TMPDIR/retc-check-MODEL.log."},
      {"train",
       absl::StrCat(
           "train MODEL [--backend NAME] [--workdir DIR] [--epochs N] [--device auto|cpu|gpu]\n"
           "                  [--nproc N] [--nnodes N --node-rank K --master HOST:PORT] [--seed "
           "N]\n"
           "                  [--progress SECONDS] [--allow-nonfinite] [--set NAME=VALUE]\n",
           kProductionUsage),
       absl::StrCat(
           "Compiles MODEL into DIR/returnn.config and trains it with RETURNN in this process.\n"
           "--nproc N (torch backend): N processes under torch's launcher (torchrun, on this\n"
           "machine) with RETURNN's torch_distributed, gloo on CPU and nccl on GPU; README,\n"
           "\"Several processes\", says how to run on several machines.\n"
           "--device: RETURNN's device; auto (default) leaves the choice to RETURNN (a GPU\n"
           "where there is one); gpu where none is usable is an error before anything is written.\n"
           "--nnodes N --node-rank K --master HOST:PORT (torch backend): node K of N machines,\n"
           "--nproc processes on each (default 1), meeting at node 0's HOST:PORT; run the same\n"
           "command on every node. Node 0 keeps the checkpoints and scores.\n"
           "Checkpoints, scores and RETURNN's log go to DIR (default: retc-work/MODEL, or\n"
           "retc-work/MODEL.torch for the torch backend: one backend per DIR);\n"
           "TensorFlow's stderr and the traceback of any error go to DIR/retc-stderr.log.\n"
           "Running it again continues after the last finished epoch; Ctrl-C (exit 130) and "
           "SIGTERM\n"
           "(exit 143: what a cluster's scheduler sends) stop it and keep the finished epochs'\n"
           "checkpoints. One run per DIR: a second one is refused while the first runs\n"
           "(DIR/retc.lock; a killed run's is taken over with a note, once the killed processes\n"
           "have let go of it: up to 30 s). A NaN or inf loss stops\n"
           "training at its step (--allow-nonfinite: it goes on). During an epoch a progress "
           "line (step,\n"
           "sequences and frames per second, loss, elapsed and estimated time) at most every\n"
           "--progress SECONDS (default 10; 0: none; a bar redrawn in place on a terminal;\n"
           "several processes: rank 0's). The last line printed is the final dev error\n"
           "(frame error; label error for a model trained with CTC).\n",
           kProductionHelp)},
      {"eval",
       "eval MODEL [--backend NAME] [--checkpoint CKPT] [--workdir DIR] [--data SET]\n"
       "                  [--device auto|cpu|gpu] [--allow-extra-params] [--allow-nonfinite]\n"
       "                  [--set NAME=VALUE]",
       "Evaluates a checkpoint of MODEL on a dataset with RETURNN's eval (no training flag:\n"
       "no dropout): every loss and error as RETURNN reports them. The last line printed is\n"
       "the main error, as training prints it. CKPT defaults to the last epoch's checkpoint\n"
       "in DIR/model (DIR: retc-work/MODEL, as for train); TF: the prefix before .index,\n"
       "torch: the .pt file. SET: dev (default), train, or an HDF file (RETURNN's HDFDataset).\n"
       "A missing or damaged checkpoint, one of another model, or one with params MODEL\n"
       "lacks (a bigger model's; --allow-extra-params uses it anyway) is an error. A NaN or\n"
       "inf loss stops eval at its step (--allow-nonfinite: it is reported)."},
      {"forward",
       "forward MODEL -o OUT.hdf [--backend NAME] [--checkpoint CKPT] [--workdir DIR]\n"
       "                  [--data SET] [--device auto|cpu|gpu] [--allow-extra-params]\n"
       "                  [--preload MODULE=CKPT2] [--set NAME=VALUE]",
       "Runs MODEL's output (mark_as_output; the one named 'output' if several) on every\n"
       "sequence of a dataset and writes it to OUT.hdf as RETURNN's forward task does\n"
       "(SimpleHDFWriter: RETURNN's HDFDataset reads it; written in a directory of its own\n"
       "beside OUT.hdf, then renamed: nothing half-written, nothing left on failure). CKPT,\n"
       "DIR and SET as for eval. --preload MODULE=CKPT2: the params under the module path\n"
       "MODULE (e.g. 'lm') come from CKPT2 instead, a checkpoint of a model whose root is that\n"
       "module (e.g. a language model trained on its own, for shallow fusion); it must hold\n"
       "exactly those params, named without 'MODULE.', with their shapes (RETURNN's\n"
       "preload_from_files with a prefix)."},
      {"search",
       "search MODEL [--backend NAME] [--checkpoint CKPT] [--workdir DIR] [--data SET]\n"
       "                  [--beam K] [--length-norm on|off] [-o HYPS] [--device auto|cpu|gpu]\n"
       "                  [--allow-extra-params] [--preload MODULE=CKPT2] [--set NAME=VALUE]",
       "Decodes a dataset with MODEL's search output (mark_as_search_output: a loop's\n"
       "choices, kept in beams of K hypotheses (default 12), or a CTC decoding), writes the\n"
       "best hypothesis of each sequence to HYPS in RETURNN's search output format (\"py\":\n"
       "{seq_tag: \"label label ...\"}) and prints the sequence error and the label error\n"
       "(edit distance per reference label) against the dataset's 'classes'; the last line\n"
       "is the label error. --length-norm on (the default, RETURNN's): hypotheses are ranked\n"
       "by their log-probs' sum divided by their length (the end label included); off: by\n"
       "the sum. CKPT, DIR and SET as for eval; --preload as for forward. It also prints how\n"
       "long the decoding itself took (sequences per second; set-up and loading not counted)."},
      {"export",
       "export MODEL --onnx OUT.onnx [--checkpoint CKPT] [--workdir DIR]\n"
       "                  [--output NAME[,NAME...]] [--allow-extra-params] [--set NAME=VALUE]",
       "Exports MODEL with the torch checkpoint CKPT (default: the last one of DIR, the\n"
       "torch default workdir) to ONNX at OUT.onnx, as RETURNN's torch_export_to_onnx.py\n"
       "does (opset 17, evaluation: dropout off): the inputs are the data the model reads\n"
       "and their sizes (RETURNN's raw names: 'data', 'data:size0' the batch size,\n"
       "'data:size1' the lengths), the outputs every output mark by its name with its\n"
       "sizes ('output', 'output:size1', ...); the batch and the dynamic axes are dynamic.\n"
       "--output: only these output marks (and what computes them), e.g. an encoder.\n"
       "Before OUT is kept, ONNX Runtime runs it on three random batches of other sizes\n"
       "than the traced one and must give the torch forward's outputs within 1e-4.\n"
       "The torch target only (a TF checkpoint: convert-checkpoint --from tf first). A\n"
       "model with an op ONNX cannot take (a loop over a dynamic axis: traced, it would\n"
       "be unrolled at the example's length) is an error naming it, before anything is\n"
       "written. OUT is written beside itself, then renamed into place. Tracebacks go to\n"
       "$TMPDIR/retc-export-MODEL.log."},
      {"convert-checkpoint",
       "convert-checkpoint MODEL --from tf|torch IN OUT [--allow-extra-params] [--set NAME=VALUE]\n"
       "                  convert-checkpoint MODEL --from returnn-tf|torch-state-dict --map MAP\n"
       "                  [--to tf|torch] IN OUT [--set NAME=VALUE]",
       "Converts a checkpoint of MODEL from one backend to the other: --from tf reads the TF\n"
       "checkpoint IN (the prefix before .index, e.g. retc-work/MODEL/model/network.005) and\n"
       "writes the RETURNN torch checkpoint OUT (a .pt file); --from torch reads a .pt file and\n"
       "writes a TF checkpoint at the prefix OUT. The params keep their names (TF\n"
       "'lstm/ff_weight/param' is torch 'lstm.ff_weight') and their layout; the epoch and the\n"
       "global train step are kept. Fails, writing nothing, if IN lacks one of MODEL's params,\n"
       "has it with another shape, or has params MODEL lacks (--allow-extra-params: skipped).\n"
       "OUT is written in a directory of its own beside it, then renamed into place.\n"
       "--from returnn-tf (a hand-written RETURNN config's TF checkpoint) or torch-state-dict\n"
       "(a .pt state dict: i6_models, plain torch) with --map MAP imports another tool's\n"
       "checkpoint for --to tf|torch (default: tf for returnn-tf, torch for the other). MAP\n"
       "has a rule a line, RETC_NAME SOURCE_NAME [OP ...]: retc's param as torch names it\n"
       "(encoder.layers.0.ff1.weight), the source's name, {name} captures one part of a\n"
       "name on both sides (encoder.layers.{i}.ff1.weight enc_{i}/ff1/W); OPs make the\n"
       "source's layout retc's, in order: transpose=1,0, reshape=512, scale=X, gates=ifgo\n"
       "(an LSTM's 4 gate blocks on the last axis in that order of input, forget, cell\n"
       "input g, output; torch's is ifgo). Each of MODEL's params must be matched by exactly\n"
       "one rule, its source there and its shape MODEL's, else an error naming the first\n"
       "that is not, and nothing is written; the source's params no rule took are listed.\n"
       "Tracebacks go to $TMPDIR/retc-convert-MODEL.log."},
      {"dump-ir",
       "dump-ir MODEL [--backend NAME] [--format text|json|dot|svg] [--debug]\n"
       "                  [--stage param-init|step] [--after PASS] [--task TASK] [--epoch N]\n"
       "                  [-o FILE] [--set NAME=VALUE]",
       "Prints MODEL's IR after the pass pipeline (or after PASS; 'build' is the IR as the\n"
       "model code built it, with the marks of every task) for --task train (default),\n"
       "eval, forward or search, what that task computes: canonical text (default), text\n"
       "with source locations (--debug), JSON with every node's stage and location,\n"
       "Graphviz dot (modules as clusters, stages as colours), or SVG rendered by\n"
       "Graphviz's 'dot'. --stage prints only the nodes of one stage: param-init (run once,\n"
       "when variables are initialized) or step (run at every step). --epoch N: the network\n"
       "that trains epoch N (models with pretraining stages; default: the last stage's).\n"
       "-o writes FILE atomically instead of stdout."},
      {"stats",
       "stats MODEL [--batch B] [--frames T] [--dim NAME=SIZE,...] [--task TASK]\n"
       "                  [--depth N] [--json] [-o FILE] [--set NAME=VALUE]",
       "Prints MODEL's static cost, computed from its IR (what --task, default train,\n"
       "computes, after the target-neutral passes: weight norm and the like expanded), without\n"
       "running anything: per module down to --depth levels (default 3) and in total, its\n"
       "params, FLOPs per input frame of a forward pass and of forward and backward, and the\n"
       "activation memory per input frame a training step keeps for its backward pass.\n"
       "Figures are for a batch of B sequences (default 1) of T frames (default 1000): every\n"
       "dynamic dim of the data has T frames, a strided conv's or pool's frames follow from\n"
       "its input's; --dim gives a dim by name (e.g. a decoder's labels=60); a dynamic dim\n"
       "nothing determines takes T and is listed. A per-frame figure is the batch's total\n"
       "over B * T (attention grows with T). FLOPs: 2 per multiply-add of matmuls,\n"
       "convolutions and attention products (as torch.profiler counts them), their backward\n"
       "once per operand that needs a gradient; other ops a few per element. --json: the\n"
       "same, every module, totals per batch and per frame."},
      {"opt", "opt FILE.ir [--backend NAME] [--passes P1,P2,...] [--print-after-all] [-o FILE]",
       "Reads IR text, runs the passes (default: the whole pipeline of the backend: the\n"
       "neutral passes, then the target's) and prints the result.\n"
       "The IR is verified first and after every pass that changed it; errors name the\n"
       "IR file's line and column, or the pass. --print-after-all prints the IR after each\n"
       "pass that changed it."},
      {"serve", "serve [--dir DIR] [--backend NAME] [--idle-minutes M] [--stop]",
       "Starts warm servers in the background, for tf and torch (or --backend's alone), and\n"
       "returns when they answer: each has started Python and imported RETURNN and\n"
       "TensorFlow or torch once, and runs each command in a child of its own, which starts\n"
       "in a fraction of a second instead of the 2-3 s of CPU those imports take.\n"
       "Commands use them where the environment variable RETC_SERVER is DIR (the default\n"
       "of --dir): check, train, eval, forward, search, export and convert-checkpoint. Such\n"
       "a command that finds no server for its binary, backend and start-up environment\n"
       "(OMP_*, TF_*, CUDA_*, ...: another value, another server) starts one for the next\n"
       "command and runs in its own process. The command's child gets the command's\n"
       "arguments, environment, folder, umask, stdin, stdout and stderr and the signals it\n"
       "gets (Ctrl-C, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1/2, Ctrl-Z and fg); the command\n"
       "exits as its child did, and ends it when killed (kill -9). What differs is the PID\n"
       "of the run. A server ends after --idle-minutes without a command (default 15), or on\n"
       "--stop, which stops every server in DIR after the commands they run. Each logs to\n"
       "DIR/*.log. --foreground --backend NAME serves in this process (what the background\n"
       "start runs)."},
  };
  return kCommands;
}

void print_usage(std::ostream& os) {
  os << "usage: retc COMMAND [ARGS]\n\n"
        "retc compiles C++ models to RETURNN configs and runs them with an embedded RETURNN.\n\n"
        "commands:\n";
  for (const Command& c : commands()) os << "  " << c.usage << "\n";
  os << "\n'retc COMMAND --help' describes a command. --backend NAME picks the target (";
  for (const runtime::Backend& b : runtime::backends()) {
    os << (&b == &runtime::backends().front() ? "" : ", ") << b.target.name << ": "
       << b.target.summary << (&b == &runtime::backends().front() ? ", the default" : "");
  }
  os << ").\nExit codes: 0 success, 1 error, 2 usage error, 130 interrupted (Ctrl-C), 143 stopped\n"
        "by SIGTERM. An error is one line on stderr that names its cause; the traceback, if\n"
        "any, is in the log file the line names.\n";
}

// `msg` and where to look: its own "(see '...')" if it ends with one, else 'retc --help'.
int usage_error(absl::string_view msg) {
  const bool has_hint = absl::StrContains(msg, " (see '") && absl::EndsWith(msg, "')");
  std::cerr << "retc: error: " << msg << (has_hint ? "" : " (see 'retc --help')") << "\n";
  return kUsage;
}

int error(const absl::Status& s) {
  std::string msg(s.message());
  // One line for the headline; notes (further lines) follow as they are.
  std::cerr << (ir::is_user_error_text(msg) ? "" : "retc: error: ") << msg << "\n";
  if (s.code() != absl::StatusCode::kCancelled) return kError;
  // Stopped by a signal: 128 + it, as the shell reports a process it killed.
  int signum = 0;
  if (auto p = s.GetPayload(runtime::kSignalPayload); p && absl::SimpleAtoi(p->Flatten(), &signum))
    return 128 + signum;
  return kInterrupted;
}

// Parsed command line: positionals and --flags (with values where needed).
struct Args {
  std::vector<std::string> positional;
  std::map<std::string, std::string> flags;
  /// --set NAME=VALUE, in order (model options).
  std::vector<std::string> sets;
  bool help = false;
};

absl::StatusOr<Args> parse_args(int argc, char** argv, int first,
                                const std::vector<std::string>& valued,
                                const std::vector<std::string>& boolean) {
  Args a;
  for (int i = first; i < argc; ++i) {
    std::string s = argv[i];
    if (s == "--help" || s == "-h") {
      a.help = true;
      continue;
    }
    if (s.starts_with("-") && s.size() > 1) {
      std::string name = s, value;
      bool inline_value = false;
      if (size_t eq = s.find('='); eq != std::string::npos) {
        name = s.substr(0, eq);
        value = s.substr(eq + 1);
        inline_value = true;
      }
      if (std::find(valued.begin(), valued.end(), name) != valued.end()) {
        if (!inline_value) {
          if (i + 1 >= argc)
            return absl::InvalidArgumentError(absl::StrCat(name, " needs a value"));
          value = argv[++i];
        }
        if (name == "--set") {
          a.sets.push_back(value);
        } else {
          a.flags[name] = value;
        }
      } else if (std::find(boolean.begin(), boolean.end(), name) != boolean.end() &&
                 !inline_value) {
        a.flags[name] = "1";
      } else {
        return absl::InvalidArgumentError(absl::StrCat("unknown option '", s, "'"));
      }
      continue;
    }
    a.positional.push_back(s);
  }
  return a;
}

const ModelDef* find_model(const std::vector<ModelDef>& models, const std::string& name) {
  for (const ModelDef& m : models) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

absl::StatusOr<const ModelDef*> find_model_arg(const std::vector<ModelDef>& models,
                                               const std::string& name) {
  const ModelDef* m = find_model(models, name);
  if (!m) {
    std::vector<std::string> names;
    for (const ModelDef& d : models) names.push_back(d.name);
    return absl::NotFoundError(
        absl::StrCat("unknown model '", name, "'; known models: ", absl::StrJoin(names, ", ")));
  }
  return m;
}

// The one MODEL argument, made with its --set options.
absl::StatusOr<ModelDef> model_arg(const std::vector<ModelDef>& models, const Args& a) {
  if (a.positional.size() != 1) return absl::InvalidArgumentError("expected exactly one MODEL");
  auto m = find_model_arg(models, a.positional[0]);
  if (!m.ok()) return m.status();
  absl::StatusOr<ModelDef> def = with_options(**m, a.sets);
  if (def.status().code() == absl::StatusCode::kInvalidArgument) {
    return absl::InvalidArgumentError(
        absl::StrCat(def.status().message(), " (see 'retc list --options ", (*m)->name, "')"));
  }
  return def;
}

// A missing or extra argument or a bad --set is a usage error (exit 2); an
// unknown model an error (exit 1), as a model whose options fail to apply.
int model_arg_error(const absl::Status& s) {
  return s.code() == absl::StatusCode::kInvalidArgument ? usage_error(s.message()) : error(s);
}

// --backend NAME (default: the first backend, tf).
absl::StatusOr<const runtime::Backend*> backend_arg(const Args& a) {
  auto it = a.flags.find("--backend");
  if (it == a.flags.end()) return &runtime::backends().front();
  return runtime::find_backend(it->second);
}

// --device auto|cpu|gpu (default auto: no `device` in the config, RETURNN
// picks a GPU where there is one).
absl::Status apply_device(const Args& a, emit::ConfigOptions& opts) {
  auto it = a.flags.find("--device");
  if (it == a.flags.end()) return absl::OkStatus();
  if (it->second != "auto" && it->second != "cpu" && it->second != "gpu") {
    return absl::InvalidArgumentError(
        absl::StrCat("--device needs auto, cpu or gpu, got '", it->second, "'"));
  }
  opts.device = it->second == "auto" ? "" : it->second;
  return absl::OkStatus();
}

// Before a command that runs RETURNN writes anything: --device gpu where the
// backend has no GPU to use is a one-line error.
absl::Status check_device(const runtime::Backend& b, const emit::ConfigOptions& opts) {
  if (opts.device != "gpu") return absl::OkStatus();
  return runtime::usable_gpus(std::string(b.target.name), opts.device).status();
}

// Sets `out` to the integer value of flag `name` if given; at least `min`.
absl::Status int_flag(const Args& a, const std::string& name, int64_t min, int64_t& out) {
  auto it = a.flags.find(name);
  if (it == a.flags.end()) return absl::OkStatus();
  int64_t n = 0;
  if (!absl::SimpleAtoi(it->second, &n) || n < min) {
    return absl::InvalidArgumentError(absl::StrCat(name, " needs a ",
                                                   min == 0 ? "non-negative" : "positive",
                                                   " integer, got '", it->second, "'"));
  }
  out = n;
  return absl::OkStatus();
}

// The training setup's production options (the torch engine's, and which
// checkpoints stay): --amp, --keep-last, --keep-best, --keep-epochs,
// --workers, --reduce, --param-sync-step, --log-verbosity.
absl::Status apply_production_flags(const Args& a, emit::ConfigOptions& opts) {
  emit::TrainingSetup& t = opts.training;
  if (auto it = a.flags.find("--amp"); it != a.flags.end()) {
    if (it->second == "off") {
      t.amp = emit::Precision::kFloat32;
    } else if (it->second == "bfloat16") {
      t.amp = emit::Precision::kBfloat16;
    } else if (it->second == "float16") {
      t.amp = emit::Precision::kFloat16;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("--amp needs bfloat16, float16 or off, got '", it->second, "'"));
    }
  }
  if (a.flags.contains("--keep-last") || a.flags.contains("--keep-best") ||
      a.flags.contains("--keep-epochs")) {
    emit::CheckpointCleanup c = t.cleanup.value_or(emit::CheckpointCleanup{});
    if (absl::Status s = int_flag(a, "--keep-last", 1, c.keep_last); !s.ok()) return s;
    if (absl::Status s = int_flag(a, "--keep-best", 0, c.keep_best); !s.ok()) return s;
    if (auto it = a.flags.find("--keep-epochs"); it != a.flags.end()) {
      c.keep.clear();
      for (absl::string_view e : absl::StrSplit(it->second, ',', absl::SkipEmpty())) {
        int64_t n = 0;
        if (!absl::SimpleAtoi(e, &n) || n < 1) {
          return absl::InvalidArgumentError(absl::StrCat(
              "--keep-epochs needs epochs (positive integers) separated by commas, got '",
              it->second, "'"));
        }
        c.keep.push_back(n);
      }
    }
    t.cleanup = c;
  }
  if (a.flags.contains("--workers")) {
    int64_t n = 0;
    if (absl::Status s = int_flag(a, "--workers", 0, n); !s.ok()) return s;
    t.data_loader_workers = n;
  }
  if (auto it = a.flags.find("--reduce"); it != a.flags.end()) {
    if (it->second != "grad" && it->second != "param")
      return absl::InvalidArgumentError(
          absl::StrCat("--reduce needs grad or param, got '", it->second, "'"));
    t.reduce =
        it->second == "param" ? emit::DistributedReduce::kParam : emit::DistributedReduce::kGrad;
    if (t.reduce == emit::DistributedReduce::kGrad) t.param_sync_step = 0;
  }
  if (absl::Status s = int_flag(a, "--param-sync-step", 1, t.param_sync_step); !s.ok()) return s;
  if (auto it = a.flags.find("--dataset-distribution"); it != a.flags.end()) {
    if (it->second != "shard" && it->second != "random_seed_offset")
      return absl::InvalidArgumentError(absl::StrCat(
          "--dataset-distribution needs shard or random_seed_offset, got '", it->second, "'"));
    t.dataset_distribution = it->second == "shard" ? emit::DatasetDistribution::kShard
                                                   : emit::DatasetDistribution::kRandomSeedOffset;
  }
  if ((t.reduce == emit::DistributedReduce::kParam) != (t.param_sync_step > 0)) {
    return absl::InvalidArgumentError(
        "--reduce param and --param-sync-step N go together (the params of the processes are "
        "averaged every N steps)");
  }
  int64_t verbosity = opts.log_verbosity;
  if (absl::Status s = int_flag(a, "--log-verbosity", 0, verbosity); !s.ok()) return s;
  if (verbosity > 5)
    return absl::InvalidArgumentError(
        absl::StrCat("--log-verbosity needs 0 to 5 (RETURNN's), got ", verbosity));
  opts.log_verbosity = verbosity;
  return absl::OkStatus();
}

// The options compile and train share: --device, --epochs, --seed (the
// config's random_seed: fresh random numbers, dataset order), and the
// production options.
absl::Status apply_setup_flags(const Args& a, emit::ConfigOptions& opts) {
  if (absl::Status s = apply_device(a, opts); !s.ok()) return s;
  if (absl::Status s = int_flag(a, "--epochs", 1, opts.training.num_epochs); !s.ok()) return s;
  if (absl::Status s = int_flag(a, "--seed", 0, opts.training.random_seed); !s.ok()) return s;
  return apply_production_flags(a, opts);
}

// --reduce, --param-sync-step and --dataset-distribution say how several
// processes train: an error where the command runs or writes one (`several`:
// --nproc/--nnodes on train, --distributed on compile).
absl::Status check_several_process_flags(const Args& a, bool several, absl::string_view how) {
  for (const char* f : {"--reduce", "--param-sync-step", "--dataset-distribution"}) {
    if (a.flags.contains(f) && !several) {
      return absl::InvalidArgumentError(
          absl::StrCat(f, " applies to training in several processes (", how, ")"));
    }
  }
  return absl::OkStatus();
}

// Without --workers (or a model's own setting), a torch run on the CPU loads
// its batches in the training process: RETURNN's default worker process is
// spawned anew for every epoch and every evaluation (torch and RETURNN
// imported again: about a second each) and competes with training for the
// cores (12ax, 5 epochs on this 2-core machine: 19 s instead of 31 s). On a
// GPU RETURNN's default (one worker) stays: there it overlaps loading with
// the steps.
void default_cpu_data_loading(const emit::Target& target, bool on_cpu, emit::ConfigOptions& opts) {
  if (target.name == "torch" && on_cpu && !opts.training.data_loader_workers)
    opts.training.data_loader_workers = 0;
}

std::string shape_str(const std::vector<int64_t>& shape) {
  return "[" + absl::StrJoin(shape, ", ") + "]";
}

// Temp directory removed on scope exit.
// $TMPDIR/retc-WHAT-MODEL.log, where a command's tracebacks go; a character
// of the model's name that a file name cannot have (a user model "lab/asr") is
// written as '_'.
std::string temp_log(const std::string& what, const std::string& model) {
  std::string name = model;
  for (char& c : name) {
    if (c == '/' || c == '\0') c = '_';
  }
  return (std::filesystem::temp_directory_path() / ("retc-" + what + "-" + name + ".log")).string();
}

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "retc-XXXXXX").string();
    if (::mkdtemp(tmpl.data())) path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// What the dev error counts: "label" (edit distance per target label) for a
// model trained with CTC, else "frame" (frame error rate).
std::string error_unit(const ModelDef& def) {
  auto g = build_model(def);
  if (!g.ok()) return "frame";
  // CTC reports a label error; a model's own error as a loss named
  // "label_error" (e.g. an edit distance over the target length) is one too.
  for (const ir::Mark& m : g->marks()) {
    if (m.kind == ir::Mark::Kind::kLoss &&
        (g->node(m.node).kind == ir::NodeKind::kCtcLoss || m.name == "label_error"))
      return "label";
  }
  return "frame";
}

// A model's options, one a line: NAME=DEFAULT, what it takes, its help.
void print_options(std::ostream& os, const ModelDef& m) {
  if (m.options.empty()) {
    os << m.name << " has no options\n";
    return;
  }
  os << m.name << "'s options (--set NAME=VALUE on every command; default shown):\n";
  std::vector<std::pair<std::string, std::string>> rows;
  size_t w = 0, tw = 0;
  for (const ModelOption& o : m.options) {
    rows.emplace_back(absl::StrCat(o.name, "=", format_option_value(o.default_value, o.type)),
                      describe_type(o));
    w = std::max(w, rows.back().first.size());
    tw = std::max(tw, rows.back().second.size());
  }
  for (size_t i = 0; i < rows.size(); ++i) {
    os << "  " << rows[i].first << std::string(w - rows[i].first.size() + 2, ' ') << rows[i].second
       << std::string(tw - rows[i].second.size() + 2, ' ') << m.options[i].help << "\n";
  }
}

// An option as JSON: name, type, default, help and its range or choices.
nlohmann::json option_json(const ModelOption& o) {
  static constexpr const char* kTypes[] = {"bool", "int", "float", "string", "enum"};
  nlohmann::json j = {{"name", o.name},
                      {"type", kTypes[static_cast<int>(o.type)]},
                      {"help", o.help},
                      {"describe", describe_type(o)}};
  std::visit([&](const auto& v) { j["default"] = v; }, o.default_value);
  if (o.type == ModelOption::Type::kInt || o.type == ModelOption::Type::kFloat) {
    const bool is_int = o.type == ModelOption::Type::kInt;
    auto bound = [&](std::optional<double> b) -> nlohmann::json {
      if (!b) return nullptr;
      return is_int ? nlohmann::json(static_cast<int64_t>(*b)) : nlohmann::json(*b);
    };
    j["min"] = bound(lower_bound(o));
    j["max"] = bound(upper_bound(o));
  }
  if (o.type == ModelOption::Type::kEnum) j["choices"] = o.choices;
  return j;
}

int cmd_list(const std::vector<ModelDef>& models, const Args& a) {
  if (a.flags.contains("--json")) {
    if (!a.positional.empty() || a.flags.contains("--options"))
      return usage_error("list --json takes no other arguments");
    nlohmann::json out = nlohmann::json::array();
    for (const ModelDef& m : models) {
      nlohmann::json opts = nlohmann::json::array();
      for (const ModelOption& o : m.options) opts.push_back(option_json(o));
      out.push_back({{"name", m.name}, {"description", m.description}, {"options", opts}});
    }
    std::cout << out.dump(1) << "\n";
    return kOk;
  }
  if (auto it = a.flags.find("--options"); it != a.flags.end()) {
    if (!a.positional.empty()) return usage_error("list --options takes one MODEL");
    auto m = find_model_arg(models, it->second);
    if (!m.ok()) return error(m.status());
    print_options(std::cout, **m);
    return kOk;
  }
  if (!a.positional.empty()) return usage_error("list takes no arguments");
  size_t w = 4;
  for (const ModelDef& m : models) w = std::max(w, m.name.size());
  for (const ModelDef& m : models) {
    std::cout << m.name << std::string(w - m.name.size() + 2, ' ') << m.description << "\n";
  }
  return kOk;
}

// --task: train (default), eval, forward or search.
absl::StatusOr<emit::Task> task_arg(const Args& a) {
  auto it = a.flags.find("--task");
  if (it == a.flags.end()) return emit::Task::kTrain;
  for (emit::Task t :
       {emit::Task::kTrain, emit::Task::kEval, emit::Task::kForward, emit::Task::kSearch}) {
    if (emit::task_name(t) == it->second) return t;
  }
  return absl::InvalidArgumentError("--task must be train, eval, forward or search");
}

// Search's options into `t`: --beam, a positive integer (default 12);
// --length-norm on|off (default on, as RETURNN's ChoiceLayer).
absl::Status search_args(const Args& a, emit::TaskOptions& t) {
  if (auto it = a.flags.find("--beam"); it != a.flags.end()) {
    if (!absl::SimpleAtoi(it->second, &t.beam) || t.beam < 1)
      return absl::InvalidArgumentError(
          absl::StrCat("--beam needs a positive integer, got '", it->second, "'"));
  }
  if (auto it = a.flags.find("--length-norm"); it != a.flags.end()) {
    if (it->second != "on" && it->second != "off")
      return absl::InvalidArgumentError(
          absl::StrCat("--length-norm must be on or off, got '", it->second, "'"));
    t.length_normalization = it->second == "on";
  }
  return absl::OkStatus();
}

int cmd_compile(const std::vector<ModelDef>& models, const Args& a) {
  auto m = model_arg(models, a);
  if (!m.ok()) return model_arg_error(m.status());
  auto backend = backend_arg(a);
  if (!backend.ok()) return usage_error(backend.status().message());
  auto out = a.flags.find("-o");
  if (out == a.flags.end()) return usage_error("compile needs -o FILE");
  auto dir = a.flags.find("--model-dir");
  emit::ConfigOptions opts = config_options(*m, dir == a.flags.end() ? "retc-model" : dir->second);
  if (absl::Status s = apply_setup_flags(a, opts); !s.ok()) return usage_error(s.message());
  const bool distributed = a.flags.contains("--distributed");
  if (absl::Status s = check_several_process_flags(a, distributed, "add --distributed"); !s.ok())
    return usage_error(s.message());
  // For torchrun by hand: gloo on CPU, else RETURNN's default (nccl for CUDA).
  if (distributed) opts.distributed = opts.device == "cpu" ? "gloo" : "";
  default_cpu_data_loading((*backend)->target, opts.device == "cpu", opts);
  auto task = task_arg(a);
  if (!task.ok()) return usage_error(task.status().message());
  if (absl::Status s = search_args(a, opts.task); !s.ok()) return usage_error(s.message());
  if (*task != emit::Task::kTrain) {
    // What `retc eval/forward/search` runs, on the dev set, without a checkpoint to load.
    opts.task.task = *task;
    opts.task.data_name = "dev";
    opts.task.data = opts.training.dev;
  }
  auto text = emit::compile_to_config(*m, (*backend)->target, opts);
  if (!text.ok()) return error(text.status());
  if (absl::Status s = emit::write_file_atomic(out->second, *text); !s.ok()) return error(s);
  return kOk;
}

int cmd_check(const std::vector<ModelDef>& models, const Args& a) {
  auto m = model_arg(models, a);
  if (!m.ok()) return model_arg_error(m.status());
  auto backend = backend_arg(a);
  if (!backend.ok()) return usage_error(backend.status().message());
  // --batch B (at least 1) and --time T (at least 3: the input's lengths are T-2..T).
  std::vector<std::pair<std::string, int64_t>> batch;
  for (const auto& [flag, entry, least] :
       {std::tuple<const char*, const char*, int64_t>{"--batch", "retc_check_batch", 1},
        {"--time", "retc_check_time", 3}}) {
    if (auto it = a.flags.find(flag); it != a.flags.end()) {
      int64_t n = 0;
      if (!absl::SimpleAtoi(it->second, &n) || n < least)
        return usage_error(absl::StrCat(flag, " needs an integer of at least ", least, ", got '",
                                        it->second, "'"));
      batch.emplace_back(entry, n);
    }
  }
  const emit::Target& target = (*backend)->target;
  const runtime::Runner& runner = (*backend)->runner;
  auto graph = emit::compile_model(*m, target);
  if (!graph.ok()) return error(graph.status());
  TempDir tmp;
  std::error_code ec;
  if (tmp.path().empty()) return error(absl::InternalError("cannot create a temp directory"));
  emit::ConfigOptions opts = config_options(*m, tmp.path() + "/model");
  auto text = target.write_config(*graph, opts);
  if (!text.ok()) return error(text.status());
  // The random batch's size (the runtime's check reads these entries).
  for (const auto& [entry, n] : batch) *text += emit::format_assignment(entry, n);
  const std::string path = tmp.path() + "/returnn.config";
  if (absl::Status s = emit::write_file_atomic(path, *text); !s.ok()) return error(s);
  // Kept after the run: TensorFlow's stderr, and the traceback of an error.
  const std::string log = temp_log("check", m->name);
  std::filesystem::remove(log, ec);
  auto r = runner.check(path, log);
  if (!r.ok()) return error(r.status());
  // RETURNN's variables must be exactly the model's params, by name and shape.
  std::map<std::string, std::vector<int64_t>> expected, got;
  std::set<std::string> not_trained;
  for (const ir::Param& p : graph->params()) {
    std::vector<int64_t> shape;
    for (const ir::Dim& d : p.dims) shape.push_back(*d.size());
    expected[runner.variable_name(p)] = shape;
    if (!p.options.trainable) not_trained.insert(runner.variable_name(p));
  }
  int64_t total = 0, trainable = 0;
  for (const runtime::Variable& v : r->variables) {
    int64_t n = 1;
    for (int64_t d : v.shape) n *= d;
    total += n;
    const bool trained = !not_trained.contains(v.name);
    if (trained) trainable += n;
    std::cout << "variable " << v.name << " " << shape_str(v.shape)
              << (trained ? "" : " (not trained)") << "\n";
  }
  for (const runtime::Variable& o : r->outputs) {
    std::cout << "output " << o.name << " " << shape_str(o.shape) << " (on a random batch)\n";
  }
  for (const runtime::Variable& l : r->losses) {
    std::cout << "loss " << l.name << " " << shape_str(l.shape) << " (on a random batch)\n";
  }
  for (const runtime::Variable& l : r->errors) {
    std::cout << "error " << l.name << " " << shape_str(l.shape) << " (on a random batch)\n";
  }
  for (const runtime::Variable& v : r->variables) got[v.name] = v.shape;
  if (expected != got) {
    return error(absl::InternalError(
        "internal error: RETURNN's variables differ from the model's named parameters"));
  }
  // Each output has the IR's dims: as many axes, and the static sizes among
  // them (RETURNN may order the axes differently; dims are matched by tag).
  for (const ir::Mark& mark : graph->marks()) {
    if (mark.kind != ir::Mark::Kind::kOutput) continue;
    const ir::Node& n = graph->node(mark.node);
    const runtime::Variable* out = nullptr;
    for (const runtime::Variable& o : r->outputs) {
      if (o.name == n.name) out = &o;
    }
    if (!out) continue;
    std::multiset<int64_t> sizes(out->shape.begin(), out->shape.end());
    bool same = out->shape.size() == n.type.dims.size();
    for (const ir::Dim& d : n.type.dims) {
      if (!d.size() || !same) continue;
      auto it = sizes.find(*d.size());
      same = it != sizes.end();
      if (same) sizes.erase(it);
    }
    if (!same) {
      return error(absl::InternalError(absl::StrCat(
          "internal error: RETURNN's output '", n.name, "' has the shape ", shape_str(out->shape),
          " on the random batch, which does not fit its dims in the model ",
          ir::describe(n.type.dims))));
    }
  }
  std::cout << m->name << ": " << r->variables.size() << " variables, " << total << " parameters ("
            << trainable << " trainable, " << total - trainable
            << " not trained); RETURNN constructed the network and ran one step on random data\n";
  return kOk;
}

// The newest checkpoint RETURNN saved in `model_dir` for the backend: TF the
// prefix of network.NNN.index, torch network.NNN.pt; empty if none.
std::string last_checkpoint(const std::string& model_dir, absl::string_view backend) {
  const std::string suffix = backend == "torch" ? ".pt" : ".index";
  std::error_code ec;
  int64_t best = -1;
  std::string found;
  for (const auto& e : std::filesystem::directory_iterator(model_dir, ec)) {
    std::string name = e.path().filename().string();
    if (!name.starts_with("network.") || !name.ends_with(suffix)) continue;
    int64_t epoch = 0;
    const std::string digits = name.substr(8, name.size() - 8 - suffix.size());
    if (!absl::SimpleAtoi(digits, &epoch) || epoch <= best) continue;
    best = epoch;
    found = (std::filesystem::path(model_dir) / name).string();
    if (backend != "torch") found.resize(found.size() - suffix.size());
  }
  return found;
}

// --workdir DIR; default retc-work/MODEL (tf) or retc-work/MODEL.BACKEND.
std::string workdir_arg(const Args& a, const ModelDef& m, const emit::Target& target) {
  if (auto it = a.flags.find("--workdir"); it != a.flags.end()) return it->second;
  const bool is_default = &target == &runtime::backends().front().target;
  return absl::StrCat("retc-work/", m.name, is_default ? "" : ".", is_default ? "" : target.name);
}

// The main error of a dataset's scores: TF, one loss: RETURNN records
// "<set>_error"; several: "<set>_error_<loss>" (the first). Torch:
// "<set>_loss_<loss>_error" (the frame error the torch target marks).
const std::pair<std::string, double>* main_error(
    const std::vector<std::pair<std::string, double>>& scores, const std::string& set) {
  const std::pair<std::string, double>* found = nullptr;
  for (const auto& kv : scores) {
    if (kv.first == set + "_error" || (kv.first.starts_with(set + "_error_") && !found))
      found = &kv;
  }
  for (const auto& kv : scores) {
    if (!found && kv.first.starts_with(set + "_loss_") && kv.first.ends_with("_error")) found = &kv;
  }
  return found;
}

// --allow-nonfinite: a NaN or inf loss does not stop training or eval
// (RETURNN's stop_on_nonfinite_train_score, which retc's torch eval follows).
void apply_nonfinite_flag(const Args& a, emit::ConfigOptions& opts) {
  if (a.flags.contains("--allow-nonfinite"))
    opts.training.extra.emplace_back("stop_on_nonfinite_train_score", emit::PyValue(false));
}

// --nproc, --nnodes, --node-rank, --master: how many processes train, and
// where (torch's launcher, torchrun; one process without any of them).
absl::StatusOr<runtime::Distributed> distributed_args(const Args& a, const runtime::Backend& b) {
  runtime::Distributed d;
  if (absl::Status s = int_flag(a, "--nproc", 1, d.nproc); !s.ok()) return s;
  if (absl::Status s = int_flag(a, "--nnodes", 1, d.nnodes); !s.ok()) return s;
  if (absl::Status s = int_flag(a, "--node-rank", 0, d.node_rank); !s.ok()) return s;
  if (auto it = a.flags.find("--master"); it != a.flags.end()) d.master = it->second;
  if (!d.several()) {
    if (a.flags.contains("--node-rank") || a.flags.contains("--master"))
      return absl::InvalidArgumentError("--node-rank and --master go with --nnodes N (N > 1)");
    return d;
  }
  if (!b.runner.train_distributed) {
    return absl::InvalidArgumentError(absl::StrCat(
        d.nnodes > 1 ? absl::StrCat("--nnodes ", d.nnodes) : absl::StrCat("--nproc ", d.nproc),
        ": the ", b.target.name,
        " target trains in one process here; several processes are on the torch "
        "target (--backend torch)"));
  }
  if (d.nnodes > 1) {
    if (d.node_rank >= d.nnodes) {
      return absl::InvalidArgumentError(absl::StrCat("--node-rank ", d.node_rank,
                                                     " is not a node of --nnodes ", d.nnodes,
                                                     " (0 to ", d.nnodes - 1, ")"));
    }
    int64_t port = 0;
    const size_t colon = d.master.rfind(':');
    if (d.master.empty() || colon == std::string::npos || colon == 0 ||
        !absl::SimpleAtoi(d.master.substr(colon + 1), &port) || port < 1 || port > 65535) {
      return absl::InvalidArgumentError(
          absl::StrCat("--nnodes ", d.nnodes,
                       " needs --master HOST:PORT (node 0's address, the same on "
                       "every node)",
                       d.master.empty() ? "" : absl::StrCat(", got '", d.master, "'")));
    }
  }
  return d;
}

int cmd_train(const std::vector<ModelDef>& models, const Args& a) {
  auto m = model_arg(models, a);
  if (!m.ok()) return model_arg_error(m.status());
  auto backend = backend_arg(a);
  if (!backend.ok()) return usage_error(backend.status().message());
  if (absl::Status s = check_data_files(*m); !s.ok()) return error(s);
  auto dist = distributed_args(a, **backend);
  if (!dist.ok()) return usage_error(dist.status().message());
  double progress = 10;
  if (auto it = a.flags.find("--progress"); it != a.flags.end()) {
    if (!absl::SimpleAtod(it->second, &progress) || !(progress >= 0))
      return usage_error(absl::StrCat(
          "--progress needs seconds between progress lines (0: none), got '", it->second, "'"));
  }
  // Everything that can fail before anything is written, not even the workdir:
  // the flags, the device, the config.
  const std::string workdir = workdir_arg(a, *m, (*backend)->target);
  std::error_code ec;
  std::string abs = std::filesystem::absolute(workdir, ec).lexically_normal().string();
  while (abs.size() > 1 && abs.back() == '/') abs.pop_back();
  emit::ConfigOptions opts = config_options(*m, abs + "/model");
  // RETURNN expands its log file's name as a string.Template ($date) after it
  // checked that the name's directory exists: no escape works for a '$'.
  if (absl::StrContains(abs, "$")) {
    return usage_error(absl::StrCat("--workdir '", workdir,
                                    "': RETURNN cannot write its log in a directory whose path has "
                                    "a '$' (it expands $date in the name); choose another"));
  }
  opts.training.extra.emplace_back("log", abs + "/returnn.log");
  apply_nonfinite_flag(a, opts);
  if (absl::Status s = apply_setup_flags(a, opts); !s.ok()) return usage_error(s.message());
  if (absl::Status s = check_several_process_flags(a, dist->several(), "--nproc N or --nnodes N");
      !s.ok())
    return usage_error(s.message());
  const bool float16 = opts.training.amp == emit::Precision::kFloat16;
  const bool torch = (*backend)->target.name == "torch";
  int gpus = 0;
  if (opts.device == "gpu" || ((dist->several() || float16 || torch) && opts.device.empty())) {
    auto n = runtime::usable_gpus(std::string((*backend)->target.name), opts.device);
    if (!n.ok()) return error(n.status());
    gpus = *n;
  }
  default_cpu_data_loading((*backend)->target, opts.device == "cpu" || gpus == 0, opts);
  // RETURNN's torch_distributed. On CPU gloo only: RETURNN's default
  // "cpu:gloo,cuda:nccl" makes torch open NCCL, which needs a CUDA device;
  // with GPUs that default (nccl for CUDA tensors). RETURNN runs several
  // processes on the CPU only when the config says `device = "cpu"`.
  if (dist->several()) {
    if (gpus == 0) opts.device = "cpu";
    opts.distributed = opts.device == "cpu" ? "gloo" : "";
  }
  auto text = emit::compile_to_config(*m, (*backend)->target, opts);
  if (!text.ok()) return error(text.status());
  // One backend per workdir: RETURNN's learning_rates file would mix their scores.
  for (const runtime::Backend& other : runtime::backends()) {
    if (&other == *backend) continue;
    const std::string found = last_checkpoint(workdir + "/model", other.target.name);
    if (!found.empty()) {
      return error(absl::FailedPreconditionError(
          absl::StrCat("'", workdir, "' holds ", other.target.name, " checkpoints (", found,
                       "); train the ", (*backend)->target.name, " target in another --workdir")));
    }
  }
  std::filesystem::create_directories(workdir, ec);
  if (ec)
    return error(absl::PermissionDeniedError(
        absl::StrCat("cannot create workdir '", workdir, "': ", ec.message())));
  // One run per workdir: a second one would train the same epochs and
  // overwrite the first one's checkpoints.
  std::string note;
  auto lock = runtime::WorkdirLock::acquire(abs, "retc train " + m->name, note);
  if (!lock.ok()) return error(lock.status());
  if (!note.empty()) std::cerr << "retc: note: " << note << std::endl;
  const std::string path = abs + "/returnn.config";
  if (absl::Status s = emit::write_file_atomic(path, *text); !s.ok()) return error(s);
  std::cout << "retc: training '" << m->name << "' with " << path << std::endl;
  if (float16 && (gpus == 0 || opts.device == "cpu")) {
    std::cout << "retc: note: --amp float16 on the CPU: autocast in float16 without loss scaling "
                 "(torch's GradScaler turns itself off without CUDA); bfloat16 needs none"
              << std::endl;
  }
  auto r = dist->several() ? (*backend)->runner.train_distributed(
                                 path, *dist, abs + "/retc-stderr.log", progress)
                           : (*backend)->runner.train(path, abs + "/retc-stderr.log", progress);
  std::cout.flush();
  if (!r.ok()) return error(r.status());
  if (dist->node_rank > 0) {
    // Rank 0, on node 0, evaluates and keeps the checkpoints and scores.
    std::cout << "retc: node " << dist->node_rank << " of " << dist->nnodes
              << " finished (node 0 keeps the checkpoints and scores)" << std::endl;
    return kOk;
  }
  const std::pair<std::string, double>* dev_error = main_error(r->scores, "dev");
  if (!dev_error)
    return error(absl::InternalError("RETURNN recorded no dev error for the last epoch"));
  std::cout << "retc: finished epoch " << r->last_epoch << " (" << dev_error->first << ")\n";
  std::cout << "final dev " << error_unit(*m) << " error: " << dev_error->second << std::endl;
  return kOk;
}

// Each param's name in a checkpoint of either backend, and its shape.
std::vector<runtime::CheckpointParam> checkpoint_params(const ir::Graph& g) {
  std::vector<runtime::CheckpointParam> params;
  for (const ir::Param& p : g.params()) {
    std::string tf_name = runtime::find_backend("tf").value()->runner.variable_name(p);
    if (tf_name.ends_with(":0")) tf_name.resize(tf_name.size() - 2);
    std::vector<int64_t> shape;
    for (const ir::Dim& d : p.dims) shape.push_back(*d.size());
    params.push_back(
        {tf_name, runtime::find_backend("torch").value()->runner.variable_name(p), shape});
  }
  return params;
}

// --checkpoint CKPT, else the last one of --workdir (the model's default
// workdir): its absolute path, or why there is none.
absl::StatusOr<std::string> checkpoint_arg(const Args& a, const ModelDef& m,
                                           const emit::Target& target) {
  const bool torch = target.name == "torch";
  const std::string workdir = workdir_arg(a, m, target);
  std::string checkpoint;
  if (auto it = a.flags.find("--checkpoint"); it != a.flags.end()) {
    checkpoint = it->second;
  } else {
    checkpoint = last_checkpoint(workdir + "/model", target.name);
    if (checkpoint.empty()) {
      return absl::NotFoundError(absl::StrCat("no ", target.name, " checkpoint in '", workdir,
                                              "/model' (train '", m.name,
                                              "' first, or pass --checkpoint)"));
    }
  }
  std::error_code ec;
  if (!std::filesystem::exists(torch ? checkpoint : checkpoint + ".index", ec)) {
    return absl::NotFoundError(torch ? absl::StrCat("no torch checkpoint '", checkpoint, "'")
                                     : absl::StrCat("no TF checkpoint '", checkpoint, "' (no '",
                                                    checkpoint, ".index'; pass the prefix, e.g. ",
                                                    workdir, "/model/network.005)"));
  }
  return std::filesystem::absolute(checkpoint, ec).lexically_normal().string();
}

// Eval, forward and search: a checkpoint on a dataset.
int cmd_task(const std::vector<ModelDef>& models, const Args& a, emit::Task task) {
  auto m = model_arg(models, a);
  if (!m.ok()) return model_arg_error(m.status());
  auto backend = backend_arg(a);
  if (!backend.ok()) return usage_error(backend.status().message());
  if (absl::Status s = check_data_files(*m); !s.ok()) return error(s);
  const emit::Target& target = (*backend)->target;
  emit::ConfigOptions device;
  if (absl::Status s = apply_device(a, device); !s.ok()) return usage_error(s.message());
  if (absl::Status s = check_device(**backend, device); !s.ok()) return error(s);
  const std::string name(emit::task_name(task));
  auto out = a.flags.find("-o");
  if (task == emit::Task::kForward && out == a.flags.end())
    return usage_error("forward needs -o OUT.hdf");
  emit::TaskOptions search;  // --beam and --length-norm, before anything is looked up
  if (task == emit::Task::kSearch) {
    if (absl::Status s = search_args(a, search); !s.ok()) return usage_error(s.message());
  }
  const bool torch = target.name == "torch";
  std::error_code ec;
  runtime::CheckpointCheck check;
  check.allow_extra_params = a.flags.contains("--allow-extra-params");
  if (auto it = a.flags.find("--preload"); it != a.flags.end()) {
    const std::string& spec = it->second;
    const size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
      return usage_error(absl::StrCat("--preload wants MODULE=CHECKPOINT, got '", spec, "'"));
    check.preload_module = spec.substr(0, eq);
    check.preload_path = spec.substr(eq + 1);
    if (!std::filesystem::exists(torch ? check.preload_path : check.preload_path + ".index", ec)) {
      return error(absl::NotFoundError(
          absl::StrCat("--preload: no ", target.name, " checkpoint '", check.preload_path, "'")));
    }
    check.preload_path =
        std::filesystem::absolute(check.preload_path, ec).lexically_normal().string();
  }
  // The model first: its mistakes (no output to decode, ...) need no Python, which
  // the torch target starts below to count the GPUs (torch's import: seconds).
  auto graph = emit::compile_model(*m, target, task);
  if (!graph.ok()) return error(graph.status());
  const std::vector<runtime::CheckpointParam> params = checkpoint_params(*graph);
  if (!check.preload_module.empty() &&
      std::none_of(params.begin(), params.end(), [&](const runtime::CheckpointParam& p) {
        return p.torch_key.starts_with(check.preload_module + ".");
      })) {
    return usage_error(absl::StrCat("--preload: '", m->name, "' has no params under '",
                                    check.preload_module, "' for its ", name, " task"));
  }
  auto found = checkpoint_arg(a, *m, target);
  if (!found.ok()) return error(found.status());
  const std::string checkpoint = *found;
  TempDir tmp;
  if (tmp.path().empty()) return error(absl::InternalError("cannot create a temp directory"));
  emit::ConfigOptions opts = config_options(*m, tmp.path() + "/model");
  opts.device = device.device;
  bool on_cpu = opts.device == "cpu";
  if (torch && opts.device.empty()) {
    auto gpus = runtime::usable_gpus(std::string(target.name), opts.device);
    if (!gpus.ok()) return error(gpus.status());
    on_cpu = *gpus == 0;
  }
  default_cpu_data_loading(target, on_cpu, opts);
  apply_nonfinite_flag(a, opts);
  emit::TaskOptions& t = opts.task;
  t.task = task;
  t.load = checkpoint;
  t.beam = search.beam;
  t.length_normalization = search.length_normalization;
  const std::string data = a.flags.contains("--data") ? a.flags.at("--data") : "dev";
  if (data == "dev" || data == "train") {
    t.data_name = data;
    t.data = data == "dev" ? opts.training.dev : opts.training.train;
  } else {
    if (!std::filesystem::exists(data, ec))
      return error(absl::NotFoundError(absl::StrCat("--data: no dataset file '", data, "'")));
    t.data_name = std::filesystem::path(data).stem().string();
    t.data = emit::PyValue::dict(
        {{"class", "HDFDataset"},
         {"files",
          emit::PyValue::list({std::filesystem::absolute(data, ec).lexically_normal().string()})}});
  }
  // Written in a private directory next to the output (RETURNN's own temporary
  // files too), renamed into place once complete; the directory is removed
  // on every path.
  std::string final_out, tmp_out;
  std::optional<emit::ScratchDir> scratch;
  if (out != a.flags.end()) {
    final_out = out->second;
    auto dir = emit::ScratchDir::beside(final_out);
    if (!dir.ok()) return error(dir.status());
    scratch.emplace(*std::move(dir));
    tmp_out = scratch->file();
  } else if (task == emit::Task::kSearch) {
    tmp_out = tmp.path() + "/hyps.py";
  }
  t.output_file = tmp_out.empty()
                      ? std::string()
                      : std::filesystem::absolute(tmp_out, ec).lexically_normal().string();
  auto text = target.write_config(*graph, opts);
  if (!text.ok()) return error(text.status());
  const std::string path = tmp.path() + "/returnn.config";
  if (absl::Status s = emit::write_file_atomic(path, *text); !s.ok()) return error(s);
  const std::string log = temp_log(name, m->name);
  std::filesystem::remove(log, ec);
  std::cout << "retc: " << name << " '" << m->name << "' (" << target.name << ") with "
            << checkpoint << " on " << t.data_name << std::endl;
  auto r = runtime::run_task_config(path, name, params, check, t.output_file, log);
  std::cout.flush();
  if (!r.ok()) return error(r.status());
  if (scratch) {
    if (absl::Status s = scratch->commit(); !s.ok()) return error(s);
  }
  std::map<std::string, double> s(r->scores.begin(), r->scores.end());
  if (task == emit::Task::kEval) {
    for (const auto& [k, v] : r->scores) std::cout << k << ": " << v << "\n";
    const std::pair<std::string, double>* main = main_error(r->scores, t.data_name);
    if (!main) return error(absl::InternalError("RETURNN reported no error for the dataset"));
    std::cout << t.data_name << " " << error_unit(*m) << " error: " << main->second << std::endl;
  } else if (task == emit::Task::kForward) {
    std::cout << "retc: wrote " << final_out << " (epoch " << r->last_epoch << ")" << std::endl;
  } else {
    const double seqs = s["seqs"], refs = s["ref_labels"];
    if (!final_out.empty()) std::cout << "retc: wrote " << final_out << "\n";
    if (s["decode_seconds"] > 0) {
      std::cout << "retc: decoded " << seqs << " sequences in "
                << absl::StrFormat("%.3f", s["decode_seconds"]) << " s ("
                << absl::StrFormat("%.1f", seqs / s["decode_seconds"])
                << " sequences per second; model set-up not counted)\n";
    }
    std::cout << t.data_name << " sequence error: " << (seqs > 0 ? s["seq_errors"] / seqs : 0.0)
              << " (" << s["seq_errors"] << " of " << seqs << " sequences)\n";
    std::cout << t.data_name << " label error: " << (refs > 0 ? s["label_errors"] / refs : 0.0)
              << std::endl;
  }
  return kOk;
}

// ONNX export (torch): a checkpoint's model with its output marks.
int cmd_export(const std::vector<ModelDef>& models, const Args& a) {
  auto m = model_arg(models, a);
  if (!m.ok()) return model_arg_error(m.status());
  auto out = a.flags.find("--onnx");
  if (out == a.flags.end()) return usage_error("export needs --onnx OUT.onnx");
  if (auto it = a.flags.find("--backend"); it != a.flags.end() && it->second != "torch") {
    auto named = runtime::find_backend(it->second);
    if (!named.ok()) return usage_error(named.status().message());
    return usage_error(absl::StrCat("export: the ", it->second,
                                    " target has no ONNX export (RETURNN exports its torch "
                                    "engine's models): use --backend torch, and convert a TF "
                                    "checkpoint with convert-checkpoint --from tf"));
  }
  const runtime::Backend* backend = runtime::find_backend("torch").value();
  const emit::Target& target = backend->target;
  // What cannot be exported is an error first, at the model's line.
  absl::StatusOr<ir::Graph> graph;
  if (auto it = a.flags.find("--output"); it != a.flags.end()) {
    graph = emit::compile_outputs(*m, target, absl::StrSplit(it->second, ','));
  } else {
    graph = emit::compile_model(*m, target, emit::Task::kForward);
  }
  if (!graph.ok()) return error(graph.status());
  if (absl::Status s = emit::torch::check_exportable(*graph); !s.ok()) return error(s);
  auto found = checkpoint_arg(a, *m, target);
  if (!found.ok()) return error(found.status());
  TempDir tmp;
  if (tmp.path().empty()) return error(absl::InternalError("cannot create a temp directory"));
  emit::ConfigOptions opts = config_options(*m, tmp.path() + "/model");
  opts.device = "cpu";
  emit::TaskOptions& t = opts.task;
  t.task = emit::Task::kForward;
  t.load = *found;
  t.export_outputs = true;
  t.data_name = "dev";
  t.data = opts.training.dev;
  auto text = target.write_config(*graph, opts);
  if (!text.ok()) return error(text.status());
  const std::string path = tmp.path() + "/returnn.config";
  if (absl::Status s = emit::write_file_atomic(path, *text); !s.ok()) return error(s);
  // Written in a private directory beside OUT, renamed into place once complete.
  auto scratch = emit::ScratchDir::beside(out->second);
  if (!scratch.ok()) return error(scratch.status());
  runtime::CheckpointCheck check;
  check.allow_extra_params = a.flags.contains("--allow-extra-params");
  const std::string log = temp_log("export", m->name);
  std::cout << "retc: export '" << m->name << "' (torch) with " << *found << " to ONNX"
            << std::endl;
  auto r =
      runtime::export_onnx_config(path, checkpoint_params(*graph), check, scratch->file(), log);
  std::cout.flush();
  if (!r.ok()) return error(r.status());
  if (absl::Status s = scratch->commit(); !s.ok()) return error(s);
  std::cout << "retc: wrote " << out->second << " (ONNX opset " << r->opset << "): inputs "
            << absl::StrJoin(r->inputs, ", ") << "; outputs " << absl::StrJoin(r->outputs, ", ")
            << std::endl;
  for (const runtime::ExportResult::Check& c : r->checks) {
    std::cout << "retc: ONNX Runtime = torch on " << c.batch << " sequences of up to " << c.frames
              << " frames: max |diff| " << c.max_diff << std::endl;
  }
  return kOk;
}

// convert-checkpoint --from returnn-tf|torch-state-dict --map MAP [--to tf|torch] IN OUT.
int cmd_import_checkpoint(const ModelDef& m, const Args& a, const std::string& format) {
  auto map = a.flags.find("--map");
  if (map == a.flags.end())
    return usage_error(absl::StrCat("--from ", format, " needs --map MAP (the names' rules)"));
  if (a.flags.contains("--allow-extra-params")) {
    return usage_error(absl::StrCat("--allow-extra-params is for --from tf|torch: with --from ",
                                    format, " the map decides, and what no rule takes is listed"));
  }
  std::error_code ec;
  if (!std::filesystem::is_regular_file(map->second, ec))
    return error(absl::NotFoundError(absl::StrCat("--map: no file '", map->second, "'")));
  std::string to = format == "returnn-tf" ? "tf" : "torch";
  if (auto it = a.flags.find("--to"); it != a.flags.end()) to = it->second;
  auto target = runtime::find_backend(to);
  if (!target.ok()) return usage_error(absl::StrCat("--to: ", target.status().message()));
  auto g = emit::compile_model(m, (*target)->target);
  if (!g.ok()) return error(g.status());
  const std::string& out = a.positional[2];
  auto scratch = emit::ScratchDir::beside(out);
  if (!scratch.ok()) return error(scratch.status());
  const std::string log = temp_log("convert", m.name);
  auto r = runtime::import_checkpoint(format, map->second, checkpoint_params(*g), a.positional[1],
                                      to, scratch->file(), log);
  if (!r.ok()) return error(r.status());
  const std::vector<std::string> suffixes =
      to == "torch" ? std::vector<std::string>{""}
                    : std::vector<std::string>{".data-00000-of-00001", ".meta", ".index"};
  if (absl::Status s = scratch->commit(suffixes); !s.ok()) return error(s);
  std::cout << "retc: imported " << r->params << " params of '" << m.name << "' from " << format
            << " (" << a.positional[1] << ") by " << map->second << " to " << to << " (" << out
            << ")\n";
  if (!r->unmatched.empty()) {
    std::cout << "retc: " << r->unmatched.size() << " params of " << a.positional[1]
              << " no rule took: " << absl::StrJoin(r->unmatched, ", ") << "\n";
  }
  return kOk;
}

int cmd_convert_checkpoint(const std::vector<ModelDef>& models, const Args& a) {
  if (a.positional.size() != 3) return usage_error("convert-checkpoint needs MODEL, IN and OUT");
  Args model_only = a;
  model_only.positional.resize(1);
  auto m = model_arg(models, model_only);
  if (!m.ok()) return model_arg_error(m.status());
  auto from = a.flags.find("--from");
  if (from == a.flags.end())
    return usage_error("convert-checkpoint needs --from tf|torch|returnn-tf|torch-state-dict");
  if (from->second == "returnn-tf" || from->second == "torch-state-dict")
    return cmd_import_checkpoint(*m, a, from->second);
  if (a.flags.contains("--map") || a.flags.contains("--to")) {
    return usage_error(absl::StrCat("--map and --to are for another tool's checkpoint (--from ",
                                    "returnn-tf|torch-state-dict), not --from ", from->second));
  }
  auto src = runtime::find_backend(from->second);
  if (!src.ok()) return usage_error(src.status().message());
  // Both targets must lower the model: the checkpoint is for the other one.
  std::vector<ir::Graph> graphs;
  for (const runtime::Backend& b : runtime::backends()) {
    auto g = emit::compile_model(*m, b.target);
    if (!g.ok()) return error(g.status());
    graphs.push_back(*std::move(g));
  }
  const std::vector<runtime::CheckpointParam> params = checkpoint_params(graphs.front());
  // Written in a private directory beside OUT, renamed into place once complete.
  const std::string& target = a.positional[2];
  auto scratch = emit::ScratchDir::beside(target);
  if (!scratch.ok()) return error(scratch.status());
  const std::string log = temp_log("convert", m->name);
  runtime::CheckpointCheck check;
  check.allow_extra_params = a.flags.contains("--allow-extra-params");
  auto r = runtime::convert_checkpoint(from->second, params, check, a.positional[1],
                                       scratch->file(), log);
  if (!r.ok()) return error(r.status());
  const std::vector<std::string> suffixes =
      from->second == "tf" ? std::vector<std::string>{""}
                           : std::vector<std::string>{".data-00000-of-00001", ".meta", ".index"};
  if (absl::Status s = scratch->commit(suffixes); !s.ok()) return error(s);
  std::cout << "retc: converted " << r->params << " params of '" << m->name << "' from "
            << from->second << " (" << a.positional[1] << ") to "
            << (from->second == "tf" ? "torch" : "tf") << " (" << a.positional[2] << "), epoch "
            << r->epoch << ", step " << r->step << "\n";
  return kOk;
}

// Writes `text` to `-o FILE` (atomically) or stdout.
int output(const Args& a, const std::string& text) {
  if (auto it = a.flags.find("-o"); it != a.flags.end()) {
    if (absl::Status s = emit::write_file_atomic(it->second, text); !s.ok()) return error(s);
    return kOk;
  }
  std::cout << text;
  return kOk;
}

// Renders dot text to SVG with Graphviz.
absl::StatusOr<std::string> render_svg(const std::string& dot) {
  TempDir tmp;
  if (tmp.path().empty()) return absl::InternalError("cannot create a temp directory");
  const std::string in = tmp.path() + "/graph.dot", out = tmp.path() + "/graph.svg";
  if (absl::Status s = emit::write_file_atomic(in, dot); !s.ok()) return s;
  std::string cmd = "dot -Tsvg -o '" + out + "' '" + in + "' 2>'" + tmp.path() + "/err'";
  int rc = std::system(cmd.c_str());
  if (rc != 0) {
    return absl::FailedPreconditionError(
        "Graphviz 'dot' failed or is not installed (Debian package graphviz); use --format dot");
  }
  std::ifstream f(out, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

int cmd_dump_ir(const std::vector<ModelDef>& models, const Args& a) {
  auto m = model_arg(models, a);
  if (!m.ok()) return model_arg_error(m.status());
  auto backend = backend_arg(a);
  if (!backend.ok()) return usage_error(backend.status().message());
  std::string format = a.flags.contains("--format") ? a.flags.at("--format") : "text";
  if (format != "text" && format != "json" && format != "dot" && format != "svg") {
    return usage_error("--format must be text, json, dot or svg");
  }
  ir::PrintOptions po;
  if (a.flags.contains("--debug")) po.mode = ir::PrintMode::kDebug;
  if (auto it = a.flags.find("--stage"); it != a.flags.end()) {
    if (it->second == "param-init") {
      po.only_stage = ir::Stage::kParamInit;
    } else if (it->second == "step") {
      po.only_stage = ir::Stage::kStep;
    } else {
      return usage_error("--stage must be param-init or step");
    }
    if (format != "text") return usage_error("--stage applies to the text format");
  }
  std::string after = a.flags.contains("--after") ? a.flags.at("--after") : "";
  std::vector<const PassInfo*> passes;
  if (after != "build") {
    auto up_to = passes_up_to(emit::pipeline((*backend)->target), after);
    if (!up_to.ok()) return usage_error(up_to.status().message());
    passes = *up_to;
  }
  int stage = -1;  // the last pretraining stage
  if (auto it = a.flags.find("--epoch"); it != a.flags.end()) {
    int64_t epoch = 0;
    if (!absl::SimpleAtoi(it->second, &epoch) || epoch < 1)
      return usage_error(absl::StrCat("--epoch needs a positive integer, got '", it->second, "'"));
    stage = stage_of_epoch(*m, epoch);
  }
  auto graph = build_model(*m, stage);
  if (!graph.ok()) return error(graph.status());
  auto task_or = task_arg(a);
  if (!task_or.ok()) return usage_error(task_or.status().message());
  const emit::Task task = *task_or;
  if (after != "build") {
    if (absl::Status s = select_task(*graph, task, m->name); !s.ok()) return error(s);
  }
  if (absl::Status s = run_passes(*graph, passes); !s.ok()) return error(s);
  if (format == "json") return output(a, ir::to_json(*graph).dump(2) + "\n");
  if (format == "dot") return output(a, ir::to_dot(*graph));
  if (format == "svg") {
    auto svg = render_svg(ir::to_dot(*graph));
    if (!svg.ok()) return error(svg.status());
    return output(a, *svg);
  }
  return output(a, ir::print(*graph, po));
}

std::string si(double v, absl::string_view unit) {
  const char* prefixes[] = {"", "k", "M", "G", "T", "P"};
  int k = 0;
  while (std::abs(v) >= 1000 && k < 5) {
    v /= 1000;
    ++k;
  }
  return absl::StrFormat("%.*f %s%s", std::abs(v) >= 100 || k == 0 ? 0 : 2, v, prefixes[k], unit);
}

int cmd_stats(const std::vector<ModelDef>& models, const Args& a) {
  auto m = model_arg(models, a);
  if (!m.ok()) return model_arg_error(m.status());
  CostOptions opts;
  int64_t depth = 3;
  for (auto [flag, value] : {std::pair{"--batch", &opts.batch}, std::pair{"--frames", &opts.frames},
                             std::pair{"--depth", &depth}}) {
    if (auto it = a.flags.find(flag); it != a.flags.end()) {
      if (!absl::SimpleAtoi(it->second, value) || *value < (value == &depth ? 0 : 1))
        return usage_error(absl::StrCat(flag, " needs a ",
                                        value == &depth ? "non-negative" : "positive",
                                        " integer, got '", it->second, "'"));
    }
  }
  if (auto it = a.flags.find("--dim"); it != a.flags.end()) {
    for (absl::string_view item : absl::StrSplit(it->second, ',', absl::SkipEmpty())) {
      std::pair<std::string, std::string> kv = absl::StrSplit(item, absl::MaxSplits('=', 1));
      int64_t size = 0;
      if (kv.first.empty() || !absl::SimpleAtoi(kv.second, &size) || size < 1)
        return usage_error(
            absl::StrCat("--dim needs NAME=SIZE with a positive SIZE, got '", item, "'"));
      opts.dims[kv.first] = size;
    }
  }
  auto graph = build_model(*m, -1);
  if (!graph.ok()) return error(graph.status());
  auto task = task_arg(a);
  if (!task.ok()) return usage_error(task.status().message());
  if (absl::Status s = select_task(*graph, *task, m->name); !s.ok()) return error(s);
  std::vector<const PassInfo*> passes;
  for (const PassInfo& p : neutral_passes()) passes.push_back(&p);
  if (absl::Status s = run_passes(*graph, passes); !s.ok()) return error(s);
  auto report = analyze_cost(*graph, opts);
  if (!report.ok()) return error(report.status());
  const double frames = static_cast<double>(report->input_frames);
  if (a.flags.contains("--json")) {
    nlohmann::json j = {{"model", m->name},
                        {"batch", opts.batch},
                        {"frames", opts.frames},
                        {"input_frames", report->input_frames},
                        {"assumed", report->assumed},
                        {"uncounted", report->uncounted},
                        {"modules", nlohmann::json::array()}};
    for (const ModuleCost& c : report->modules) {
      j["modules"].push_back(
          {{"path", c.path},
           {"params", c.params},
           {"forward_flops", c.forward_flops},
           {"backward_flops", c.backward_flops},
           {"activation_bytes", c.activation_bytes},
           {"forward_flops_per_frame", c.forward_flops / frames},
           {"train_flops_per_frame", (c.forward_flops + c.backward_flops) / frames},
           {"activation_bytes_per_frame", c.activation_bytes / frames}});
    }
    return output(a, j.dump(2) + "\n");
  }
  std::string text = absl::StrFormat(
      "%s: a batch of %d x %d frames (%d input frames), task %s; per input frame:\n\n", m->name,
      opts.batch, opts.frames, report->input_frames, emit::task_name(*task));
  size_t width = 7;
  for (const ModuleCost& c : report->modules) {
    if (c.depth <= depth)
      width =
          std::max(width, 2 * c.depth + std::max<size_t>(c.path.size() - c.path.rfind('.') - 1, 1));
  }
  absl::StrAppend(&text, absl::StrFormat("%-*s %12s %16s %16s %14s\n", width, "module", "params",
                                         "forward FLOPs", "fwd+bwd FLOPs", "activations"));
  for (const ModuleCost& c : report->modules) {
    if (c.depth > depth) continue;
    const std::string name =
        c.path.empty()
            ? "(model)"
            : std::string(2 * (c.depth - 1), ' ') +
                  c.path.substr(c.path.rfind('.') == std::string::npos ? 0 : c.path.rfind('.') + 1);
    absl::StrAppend(
        &text,
        absl::StrFormat("%-*s %12s %16s %16s %14s\n", width, name,
                        si(static_cast<double>(c.params), ""), si(c.forward_flops / frames, "FLOP"),
                        si((c.forward_flops + c.backward_flops) / frames, "FLOP"),
                        si(c.activation_bytes / frames, "B")));
  }
  const ModuleCost& total = report->modules.front();
  absl::StrAppend(
      &text, absl::StrFormat("\nthe batch: forward %s, forward+backward %s, activations kept for "
                             "backward %s\n",
                             si(total.forward_flops, "FLOP"),
                             si(total.forward_flops + total.backward_flops, "FLOP"),
                             si(total.activation_bytes, "B")));
  if (!report->assumed.empty())
    absl::StrAppend(
        &text, "assumed sizes (set them with --dim): ", absl::StrJoin(report->assumed, ", "), "\n");
  if (!report->uncounted.empty())
    absl::StrAppend(&text, "not counted (unknown cost): ", absl::StrJoin(report->uncounted, ", "),
                    "\n");
  return output(a, text);
}

int cmd_opt(const Args& a) {
  if (a.positional.size() != 1) return usage_error("opt needs exactly one FILE.ir");
  auto backend = backend_arg(a);
  if (!backend.ok()) return usage_error(backend.status().message());
  const std::string& file = a.positional[0];
  std::ifstream in(file, std::ios::binary);
  if (!in) return error(absl::NotFoundError(absl::StrCat("cannot read '", file, "'")));
  std::stringstream ss;
  ss << in.rdbuf();
  auto graph = ir::parse(ss.str(), file);
  if (!graph.ok()) return error(graph.status());
  std::vector<const PassInfo*> passes = emit::pipeline((*backend)->target);
  if (auto it = a.flags.find("--passes"); it != a.flags.end()) {
    auto named = find_passes(passes, absl::StrSplit(it->second, ',', absl::SkipEmpty()));
    if (!named.ok()) return error(named.status());
    passes = *named;
  }
  std::string log;
  PassObserver print_after = [&](absl::string_view pass, const ir::Graph& g) {
    absl::StrAppend(&log, "# after ", pass, "\n", ir::print(g), "\n");
  };
  if (absl::Status s = run_passes(
          *graph, passes, a.flags.contains("--print-after-all") ? print_after : PassObserver());
      !s.ok()) {
    std::cout << log;
    return error(s);
  }
  return output(a, log + ir::print(*graph));
}

}  // namespace

namespace {

// SIGTERM while no run is under way (compiling, before RETURNN starts): one
// line and exit 143. During a run the runtime's own handler stops RETURNN as
// Ctrl-C does (runtime::call_logged), and this one is restored afterwards.
extern "C" void on_sigterm(int) {
  static constexpr char kMsg[] = "retc: error: stopped by SIGTERM\n";
  [[maybe_unused]] ssize_t n = ::write(2, kMsg, sizeof kMsg - 1);
  ::_exit(128 + SIGTERM);
}

}  // namespace

namespace {
// The binary's models, built at their first use: a server's child builds
// them after it has taken its command's environment (a model may read it:
// digits-ctc its corpus's folder), the server itself never.
class Models {
 public:
  Models(ModelTable make, bool servable) : make_(std::move(make)), servable_(servable) {}
  const std::vector<ModelDef>& operator()() const {
    if (!made_) made_ = make_();
    return *made_;
  }
  /// Built on demand by a function (run_cli's ModelTable form): a server may run them.
  bool servable() const { return servable_; }

 private:
  ModelTable make_;
  bool servable_;
  mutable std::optional<std::vector<ModelDef>> made_;
};

int run_command(int argc, char** argv, const Models& table);
int run_here(int argc, char** argv, const Models& table);

// retc serve: see its help.
int cmd_serve(const Models& table, const Args& a) {
  if (!a.positional.empty()) return usage_error("serve takes no MODEL");
  if (!table.servable())
    return error(absl::FailedPreconditionError(
        "this binary gives run_cli its models made before the command's environment is known; "
        "a server runs the models of a function: retc::run_cli(argc, argv, my_models)"));
  std::string dir = runtime::server_dir();
  if (auto it = a.flags.find("--dir"); it != a.flags.end())
    dir = std::filesystem::absolute(it->second).lexically_normal().string();
  if (dir.empty()) return usage_error("serve needs --dir DIR, or RETC_SERVER set to one");
  if (a.flags.count("--stop")) {
    auto n = runtime::stop_servers(dir);
    if (!n.ok()) return error(n.status());
    std::cout << "retc serve: stopped " << *n << " server" << (*n == 1 ? "" : "s") << " in " << dir
              << "\n";
    return kOk;
  }
  double minutes = 15;
  if (auto it = a.flags.find("--idle-minutes"); it != a.flags.end()) {
    if (!absl::SimpleAtod(it->second, &minutes) || !(minutes > 0))
      return usage_error(
          absl::StrCat("--idle-minutes needs a number above 0, got '", it->second, "'"));
  }
  std::vector<std::string> names = {"tf", "torch"};
  if (auto it = a.flags.find("--backend"); it != a.flags.end()) {
    auto b = runtime::find_backend(it->second);
    if (!b.ok()) return usage_error(b.status().message());
    names = {it->second};
  }
  if (a.flags.count("--foreground")) {
    if (names.size() != 1) return usage_error("serve --foreground needs --backend");
    absl::Status s = runtime::serve(dir, names[0], minutes * 60, [&table](int argc, char** argv) {
      return run_here(argc, argv, table);
    });
    return s.ok() ? kOk : error(s);
  }
  std::string log;
  absl::Status s = runtime::start_servers(dir, names, minutes * 60, log);
  std::cout << log;
  if (!s.ok()) return error(s);
  std::cout << "retc serve: commands use them where RETC_SERVER=" << dir << "\n";
  return kOk;
}
}  // namespace

namespace {
// The command in this process (a server's child runs it so too).
int run_here(int argc, char** argv, const Models& table) {
  const int rc = run_command(argc, argv, table);
  std::cout.flush();
  runtime::run_exit_handlers();
  return rc;
}
}  // namespace

int run_cli(int argc, char** argv, const ModelTable& models) {
  if (std::optional<int> rc =
          runtime::run_in_server(argc, argv, runtime::server_backend(argc, argv)))
    return *rc;
  return run_here(argc, argv, Models(models, true));
}

int run_cli(int argc, char** argv, const std::vector<ModelDef>& models) {
  return run_here(argc, argv, Models([&models] { return models; }, false));
}

namespace {

int run_command(int argc, char** argv, const Models& table) {
  struct sigaction term {};
  term.sa_handler = on_sigterm;
  ::sigaction(SIGTERM, &term, nullptr);
  if (argc < 2) {
    print_usage(std::cerr);
    return kUsage;
  }
  std::string cmd = argv[1];
  if (cmd == "--help" || cmd == "-h" || cmd == "help") {
    print_usage(std::cout);
    return kOk;
  }
  const Command* c = nullptr;
  for (const Command& k : commands()) {
    if (k.name == cmd) c = &k;
  }
  if (!c) return usage_error(absl::StrCat("unknown command '", cmd, "'"));
  std::vector<std::string> valued, boolean;
  if (cmd == "compile") {
    valued = {"-o",     "--model-dir", "--epochs", "--device",
              "--seed", "--task",      "--beam",   "--length-norm"};
    boolean = {"--distributed"};
  }
  if (cmd == "check") valued = {"--batch", "--time"};
  if (cmd == "train")
    valued = {"--workdir",   "--epochs", "--device", "--nproc",   "--nnodes",
              "--node-rank", "--master", "--seed",   "--progress"};
  if (cmd == "compile" || cmd == "train") {
    for (const char* f :
         {"--amp", "--keep-last", "--keep-best", "--keep-epochs", "--workers", "--reduce",
          "--param-sync-step", "--dataset-distribution", "--log-verbosity"})
      valued.push_back(f);
  }
  if (cmd == "convert-checkpoint") valued = {"--from", "--map", "--to"};
  if (cmd == "eval" || cmd == "forward" || cmd == "search")
    valued = {"--checkpoint", "--workdir", "--data", "--device"};
  if (cmd == "export") valued = {"--onnx", "--checkpoint", "--workdir", "--output"};
  if (cmd == "eval" || cmd == "forward" || cmd == "search" || cmd == "convert-checkpoint" ||
      cmd == "export")
    boolean = {"--allow-extra-params"};
  if (cmd == "eval" || cmd == "train") boolean.push_back("--allow-nonfinite");
  if (cmd == "forward" || cmd == "search") valued.insert(valued.end(), {"-o", "--preload"});
  if (cmd == "search") valued.insert(valued.end(), {"--beam", "--length-norm"});
  if (cmd == "dump-ir") {
    valued = {"--format", "--stage", "--after", "--task", "--epoch", "-o"};
    boolean = {"--debug"};
  }
  if (cmd == "stats") {
    valued = {"--batch", "--frames", "--dim", "--task", "--depth", "-o"};
    boolean = {"--json"};
  }
  if (cmd == "opt") {
    valued = {"--passes", "-o"};
    boolean = {"--print-after-all"};
  }
  if (cmd == "serve") {
    valued = {"--dir", "--idle-minutes"};
    boolean = {"--stop", "--foreground"};
  }
  if (cmd != "list" && cmd != "convert-checkpoint" && cmd != "stats") valued.push_back("--backend");
  if (cmd == "list") {
    valued = {"--options"};
    boolean = {"--json"};
  }
  const bool takes_options = cmd != "list" && cmd != "opt" && cmd != "serve";
  if (takes_options) valued.push_back("--set");
  auto args = parse_args(argc, argv, 2, valued, boolean);
  if (!args.ok()) return usage_error(args.status().message());
  if (args->help) {
    std::cout << "usage: retc " << c->usage << "\n\n" << c->help << "\n";
    if (takes_options) {
      std::cout << "--set NAME=VALUE sets an option of MODEL (repeatable; 'retc list --options "
                   "MODEL'\nlists them); a wrong name, type or range is a usage error.\n";
      if (args->positional.size() == 1) {
        if (const ModelDef* m = find_model(table(), args->positional[0])) {
          std::cout << "\n";
          print_options(std::cout, *m);
        }
      }
    }
    return kOk;
  }
  if (cmd == "serve") return cmd_serve(table, *args);
  const std::vector<ModelDef>& models = table();
  if (cmd == "list") return cmd_list(models, *args);
  if (cmd == "compile") return cmd_compile(models, *args);
  if (cmd == "check") return cmd_check(models, *args);
  if (cmd == "train") return cmd_train(models, *args);
  if (cmd == "opt") return cmd_opt(*args);
  if (cmd == "convert-checkpoint") return cmd_convert_checkpoint(models, *args);
  if (cmd == "eval") return cmd_task(models, *args, emit::Task::kEval);
  if (cmd == "forward") return cmd_task(models, *args, emit::Task::kForward);
  if (cmd == "search") return cmd_task(models, *args, emit::Task::kSearch);
  if (cmd == "export") return cmd_export(models, *args);
  if (cmd == "stats") return cmd_stats(models, *args);
  return cmd_dump_ir(models, *args);
}

}  // namespace

}  // namespace retc
