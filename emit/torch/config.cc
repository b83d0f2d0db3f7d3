#include "emit/torch/config.h"

#include <algorithm>
#include <memory>

#include "absl/algorithm/container.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "emit/code_writer.h"
#include "emit/py_value.h"
#include "emit/torch/dims.h"
#include "emit/torch/helpers.h"
#include "emit/torch/loops.h"
#include "emit/torch/lower.h"
#include "emit/torch/stages.h"
#include "ir/dim_table.h"
#include "ir/loops.h"
#include "ir/status_macros.h"

namespace retc::emit::torch {
namespace {

// The optimizers (RETURNN's class names, as Python reprs) with a fused update in torch.
constexpr absl::string_view kFusedOptimizers[] = {"\"adam\"", "\"adamw\"", "\"sgd\"",
                                                  "\"adagrad\""};

// The dims of every stage: the last stage's table, and the earlier stages'
// (their dims take the last stage's names where they match).
struct StageDims {
  ir::DimTable last;
  std::vector<std::unique_ptr<ir::DimTable>> earlier;
  explicit StageDims(const std::vector<StageGraph>& stages) : last(*stages.back().graph) {
    for (size_t s = 0; s + 1 < stages.size(); ++s)
      earlier.push_back(std::make_unique<ir::DimTable>(*stages[s].graph, &last));
  }
  const ir::DimTable& of(size_t s) const { return s < earlier.size() ? *earlier[s] : last; }
};

// The torch engine's own training entries (torch_amp, ...), and that a
// cleanup of old checkpoints deletes their optimizer states too (RETURNN
// keeps the last two otherwise, whatever the cleanup keeps).
std::vector<std::pair<std::string, PyValue>> torch_entries(const ConfigOptions& opts) {
  std::vector<std::pair<std::string, PyValue>> out;
  for (TorchOnlyEntry& e : torch_only_entries(opts)) out.emplace_back(e.name, std::move(e.value));
  if (opts.training.cleanup) out.emplace_back("apply_cleanup_old_models_to_optim_states", true);
  return out;
}

// The imports and RETURNN's engine entries.
void write_preamble(CodeWriter& w, const ir::Graph& g, const ConfigOptions& opts, bool forward) {
  w.raw(config_header(g, opts));
  w.raw(
      "import math\n\nimport numpy\nimport torch\n\nimport returnn.frontend as rf\n"
      "from returnn.tensor import Dim, batch_dim\n");
  if (forward) w.line("from returnn.forward_iface import ForwardCallbackIface");
  w.blank();
  w.raw(format_assignment("backend", "torch"));
  w.raw(format_assignment("behavior_version", kBehaviorVersion));
  // Search on RETURNN's torch engine is its forward task with a forward_step
  // that decodes (RETURNN's "search" task is TF only).
  w.raw(
      format_assignment("task", std::string(task_name(forward ? Task::kForward : opts.task.task))));
  w.raw(device_entry(opts));
  w.raw(beam_entry(opts));
  // "same" padding with strides as TF pads (the total k - 1 - (n - 1) % s,
  // the extra frame on the right), not rf's newer length-independent padding.
  w.raw(format_assignment("rf_use_consistent_same_padding", false));
  w.blank();
}

// Every dim as a variable; then the later occurrences of a dim in one type
// (square weights), and `_primed`: each with its dim (by identifier, once
// over all stages).
void write_dims(CodeWriter& w, const std::vector<StageGraph>& stages, const StageDims& sd) {
  const ir::DimTable& t = sd.last;
  for (const ir::Dim& d : t.dims()) w.raw(format_assignment(t.id(d), dim_definition(t, d)));
  for (const auto& st : sd.earlier) {
    for (size_t i = 0; i < st->dims().size(); ++i) {
      const ir::Dim& d = st->dims()[i];
      if (!st->from_base(i)) w.raw(format_assignment(st->id(d), dim_definition(*st, d)));
    }
  }
  std::vector<std::string> ids;
  std::vector<PyValue> primed;
  auto note = [&](const ir::DimTable& tab, const std::vector<ir::Dim>& dims) {
    for (size_t i = 0; i < dims.size(); ++i) {
      int k = 1;
      for (size_t j = 0; j < i; ++j) k += dims[j] == dims[i];
      const std::string id = occurrence_id(tab, dims[i], k);
      if (k == 1 || std::find(ids.begin(), ids.end(), id) != ids.end()) continue;
      ids.push_back(id);
      const ir::Dim& d = dims[i];
      w.raw(format_assignment(
          id, PyValue::call("Dim", {d.size() ? PyValue(*d.size()) : PyValue::none()},
                            {{"name", absl::StrCat(d.name(), "__", k)}})));
      primed.push_back(PyValue::tuple({PyValue::ref(id), PyValue::ref(tab.id(d))}));
    }
  };
  auto note_graph = [&](const ir::Graph& gr, const ir::DimTable& tab) {
    for (const ir::Param& p : gr.params()) note(tab, p.dims);
    for (const ir::Node& n : gr.nodes()) note(tab, n.type.dims);
  };
  note_graph(*stages.back().graph, t);
  for (size_t s = 0; s + 1 < stages.size(); ++s) note_graph(*stages[s].graph, sd.of(s));
  w.blank();
  w.raw(format_assignment("_primed", PyValue::list(std::move(primed))));
  w.blank();
}

// extern_data: each data node's dims and dtype. Data other than the input is
// available for inference if the graph reads it other than as a loss's
// target, and else not: RETURNN's torch forward then does not ask the dataset
// for it (a forward on data without targets runs).
void write_extern_data(CodeWriter& w, const ir::Graph& g, const ir::DimTable& t) {
  PyValue extern_data = PyValue::dict();
  for (size_t i = 0; i < g.size(); ++i) {
    const ir::Node& n = g.nodes()[i];
    if (n.kind != ir::NodeKind::kData) continue;
    PyValue d = PyValue::dict(
        {{"dims", dims_value(t, n.type.dims)}, {"dtype", std::string(dtype_name(n.type.dtype))}});
    if (n.type.sparse_dim) d.set("sparse_dim", dim_ref(t, *n.type.sparse_dim));
    // Dense data's static last dim as its feature dim: RETURNN's dataset API
    // (DummyGenericDataset's data_template) reads the data's dimension.
    if (!n.type.sparse_dim && !n.type.dims.empty() && n.type.dims.back().is_feature_like() &&
        n.type.dims.back().size())
      d.set("feature_dim", dim_ref(t, n.type.dims.back()));
    const std::string& key = n.attrs.get<ir::attr::Key>();
    if (key != "data") d.set("available_for_inference", reads_data(g, n));
    extern_data.append(key, std::move(d));
  }
  w.raw(format_assignment("extern_data", extern_data));
}

// What the params' options need of the config.
struct ParamUse {
  bool lr_multiplier = false, coupled = false, hooked = false;
};

// `_param_options`: the param options RETURNN's torch engine has no config
// entry for (helpers.py applies them).
ParamUse write_param_options(CodeWriter& w, const ir::Graph& g) {
  ParamUse use;
  PyValue param_options = PyValue::dict();
  for (const ir::Param& p : g.params()) {
    const ir::ParamOptions& o = p.options;
    PyValue opts = PyValue::dict();
    if (o.weight_decay.value != 0.0) {
      opts.set(o.weight_decay.coupled ? "coupled_weight_decay" : "decoupled_weight_decay",
               o.weight_decay.value);
      use.coupled |= o.weight_decay.coupled;
      use.hooked |= !o.weight_decay.coupled;
    }
    if (o.lr_multiplier != 1.0) {
      opts.set("learning_rate_multiplier", o.lr_multiplier);
      use.lr_multiplier = true;
    }
    if (o.gradient_clip != 0.0) {
      opts.set("gradient_clip", o.gradient_clip);
      use.hooked = true;
    }
    if (!opts.items().empty()) param_options.append(p.path, std::move(opts));
  }
  w.blank();
  w.blank();
  w.raw(format_assignment("_param_options", param_options));
  return use;
}

// The name of the first output mark on `value`.
std::string mark_name_of(const ir::Graph& g, const ir::Node& value) {
  for (const ir::Mark& m : g.marks())
    if (m.kind == ir::Mark::Kind::kOutput && &g.node(m.node) == &value) return m.name;
  return value.name;
}

// Forward and search: forward_step gives the marked value to RETURNN's
// forward callback (an HDF file, or the search's hypotheses).
absl::Status write_forward(CodeWriter& w, const ir::Graph& g, const ir::DimTable& t,
                           const ir::LoopAnalysis& loops, const ConfigOptions& opts) {
  const Task task = opts.task.task;
  const ir::Node* value = task == Task::kForward
                              ? first_marked(g, ir::Mark::Kind::kOutput, "output")
                              : first_marked(g, ir::Mark::Kind::kSearch);
  if (!value) return absl::InternalError("a forward or search config without its output");
  // The outputs by their marks' names: forward's one (the HDF's), or every
  // output mark for an export, declared in model_outputs (RETURNN's export
  // names the ONNX outputs by them).
  std::vector<std::pair<std::string, const ir::Node*>> outputs;
  if (opts.task.export_outputs) {
    for (const ir::Mark& m : g.marks())
      if (m.kind == ir::Mark::Kind::kOutput) outputs.emplace_back(m.name, &g.node(m.node));
  } else {
    outputs.emplace_back(task == Task::kForward ? mark_name_of(g, *value) : value->name, value);
  }
  w.blank();
  {
    auto step = w.block("def forward_step(*, model, extern_data, **_kwargs):");
    write_step_code(w, g, t, loops);
    for (const auto& [name, node] : outputs) {
      w.line("rf.get_run_ctx().mark_as_output(", node->name, ", ", PyValue(name).repr(),
             ", dims=_batch_major(", node->name, "))");
    }
  }
  w.blank();
  w.blank();
  if (opts.task.export_outputs) {
    PyValue model_outputs = PyValue::dict();
    for (const auto& [name, node] : outputs) {
      // _batch_major's order: the batch dim, the dynamic dims, the static ones.
      std::vector<ir::Dim> dims;
      for (int pass = 0; pass < 3; ++pass) {
        for (const ir::Dim& d : node->type.dims) {
          const int rank = d.is_batch() ? 0 : d.is_dynamic() ? 1 : 2;
          if (rank == pass) dims.push_back(d);
        }
      }
      PyValue o = PyValue::dict(
          {{"dims", dims_value(t, dims)}, {"dtype", std::string(dtype_name(node->type.dtype))}});
      if (node->type.sparse_dim) o.set("sparse_dim", dim_ref(t, *node->type.sparse_dim));
      model_outputs.append(name, std::move(o));
    }
    w.raw(format_assignment("model_outputs", model_outputs));
  }
  PyValue callback;
  if (task == Task::kForward) {
    // As RETURNN's TF forward: the feature dim's size, or the classes' if sparse.
    const ir::TensorType& ty = value->type;
    int64_t dim = 0;
    for (const ir::Dim& d : ty.dims) dim = d.size().value_or(dim);
    if (ty.sparse_dim) dim = ty.sparse_dim->size().value_or(0);
    callback = PyValue::call("_HdfWriter", {opts.task.output_file, outputs[0].first, dim,
                                            static_cast<int64_t>(ty.dims.size()) - 1});
  } else {
    callback = PyValue::call("_SearchWriter", {opts.task.output_file, value->name});
  }
  w.raw(training_entries(opts, {}, torch_entries(opts)));
  w.raw(task_entries(opts, {{"forward_data", opts.task.data}, {"forward_callback", callback}}));
  return absl::OkStatus();
}

// Training: train_step (with pretraining stages: the step of the stage that
// trains the epoch; the model holds the last stage's params, and every
// stage's are among them), then the training setup.
absl::Status write_train(CodeWriter& w, const std::vector<StageGraph>& stages, const StageDims& sd,
                         const ir::LoopAnalysis& loops, const ConfigOptions& opts,
                         const ParamUse& use) {
  if (stages.size() == 1) {
    w.blank();
    auto step = w.block("def train_step(*, model, extern_data, **_kwargs):");
    write_train_step_body(w, *stages[0].graph, sd.last, loops, use.coupled);
  } else {
    std::vector<PyValue> steps;
    for (size_t s = 0; s < stages.size(); ++s) {
      const bool last = s + 1 == stages.size();
      ASSIGN_OR_RETURN(const ir::LoopAnalysis sl, ir::analyze_loops(*stages[s].graph));
      const std::string name = absl::StrCat("_train_step_stage", s);
      w.blank();
      {
        auto step = w.block("def ", name, "(model, extern_data):");
        write_train_step_body(w, *stages[s].graph, sd.of(s), last ? loops : sl, use.coupled);
      }
      w.blank();
      steps.push_back(PyValue::ref(name));
    }
    w.blank();
    w.raw(stage_selector(stages));
    w.blank();
    w.blank();
    auto step = w.block("def train_step(*, model, extern_data, **_kwargs):");
    w.line("\"\"\"The step of the pretraining stage that trains this epoch.\"\"\"");
    w.line("return ", PyValue::list(std::move(steps)).repr(),
           "[_stage_of(rf.get_run_ctx().epoch)](model, extern_data)");
  }
  w.blank();
  w.blank();
  ConfigOptions own = opts;
  PyValue& optimizer = own.training.optimizer;
  // TF1's names for torch's optimizers (the rest are the same name on both).
  if (const PyValue* cls = optimizer.get("class"); cls && cls->repr() == "\"gradientdescent\"")
    optimizer.set("class", "sgd");
  // torch's fused update (one kernel over all params, CPU and GPU) where it
  // has one, unless the user chose: its Adam takes 53 ms for 142M params here
  // against 234-352 ms for the default per-param loop.
  if (const PyValue* cls = optimizer.get("class");
      cls && absl::c_linear_search(kFusedOptimizers, absl::AsciiStrToLower(cls->repr())) &&
      !optimizer.get("fused") && !optimizer.get("foreach"))
    optimizer.set("fused", true);
  if (use.lr_multiplier) optimizer.set("param_groups_custom", PyValue::ref("_param_groups"));
  w.raw(training_entries(own, {}, torch_entries(own)));
  w.raw(task_entries(own, {}));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> write_config(const ir::Graph& g, const ConfigOptions& opts) {
  return write_config(std::vector<StageGraph>{{1, &g}}, opts);
}

absl::StatusOr<std::string> write_config(const std::vector<StageGraph>& stages,
                                         const ConfigOptions& opts) {
  const ir::Graph& g = *stages.back().graph;
  const StageDims sd(stages);
  const ir::DimTable& t = sd.last;
  const bool forward = opts.task.task == Task::kForward || opts.task.task == Task::kSearch;
  CodeWriter w;
  write_preamble(w, g, opts, forward);
  write_dims(w, stages, sd);
  write_extern_data(w, g, t);
  const size_t helpers_at = w.str().size();  // the used helpers go here, once the code is known
  const ParamUse use = write_param_options(w, g);
  // A checkpoint in `load` sets every param where the task is not training
  // (RETURNN then loads it, and fails on a missing param).
  const bool loads_all = opts.task.task != Task::kTrain && !opts.task.load.empty();
  write_model(w, g, t, use.hooked, /*initial_values=*/!loads_all);
  w.blank();
  // The step stage, at every step.
  ASSIGN_OR_RETURN(const ir::LoopAnalysis loops, ir::analyze_loops(g));
  if (forward) {
    RETURN_IF_ERROR(write_forward(w, g, t, loops, opts));
  } else {
    RETURN_IF_ERROR(write_train(w, stages, sd, loops, opts, use));
  }
  std::string out = w.take();
  out.insert(helpers_at, used_helpers(absl::string_view(out).substr(helpers_at)));
  return out;
}

}  // namespace retc::emit::torch
