#include "emit/torch/stages.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "emit/py_value.h"
#include "emit/torch/dims.h"
#include "emit/torch/loops.h"
#include "emit/torch/lower.h"

namespace retc::emit::torch {

void write_model(CodeWriter& w, const ir::Graph& g, const ir::DimTable& t, bool hooked,
                 bool initial_values) {
  w.blank();
  w.blank();
  {
    auto cls = w.block("class Model(rf.Module):");
    w.line(initial_values ? "\"\"\"The model's params, with their initial values.\"\"\""
                          : "\"\"\"The model's params, without initial values: the checkpoint in "
                            "`load` sets every one.\"\"\"");
    w.blank();
    auto init = w.block("def __init__(self):");
    w.line("super().__init__()");
    for (const ir::Param& p : g.params()) {
      w.line("_add_param(self, ", PyValue(p.path).repr(), ", rf.Parameter(",
             dims_value(t, p.dims).repr(),
             p.dtype == ir::DType::kFloat32
                 ? std::string()
                 : absl::StrCat(", dtype=", PyValue(std::string(dtype_name(p.dtype))).repr()),
             "))");
    }
    if (initial_values) {
      // The seeded random initial values first, drawn together (_randoms: in
      // threads); then the rest of stage param-init in order.
      auto batched = [&](const ir::Node& n) {
        return n.stage == ir::Stage::kParamInit && n.kind == ir::NodeKind::kRandom;
      };
      std::vector<const ir::Node*> randoms;
      for (const ir::Node& n : g.nodes()) {
        if (batched(n)) randoms.push_back(&n);
      }
      if (!randoms.empty()) {
        w.line("_drawn = _randoms([");
        for (const ir::Node* n : randoms) w.line("    (", random_args(g, t, *n), "),");
        w.line("])");
        for (size_t i = 0; i < randoms.size(); ++i) w.line(randoms[i]->name, " = _drawn[", i, "]");
      }
      for (const ir::Node& n : g.nodes()) {
        if (n.stage == ir::Stage::kParamInit && !batched(n))
          w.line(n.name, " = ", value_of(g, t, n, "self"));
      }
    }
    for (const ir::Param& p : g.params()) {
      const ir::ParamOptions& o = p.options;
      const std::string param = absl::StrCat("_param(self, ", PyValue(p.path).repr(), ")");
      if (!o.trainable) w.line(param, ".trainable = False");
      if (initial_values)
        w.line(param, ".initial = ",
               o.init_node >= 0 ? g.node(ir::NodeId{o.init_node}).name
                                : PyValue(o.initial.value).repr());
    }
    if (hooked) w.line("_apply_param_options(self, _param_options)");
  }
  w.blank();
  w.blank();
  auto get = w.block("def get_model(**_kwargs):");
  w.line("return Model()");
}

namespace {

// One loss mark: its value to RETURNN's run context, with its error where
// it has one, normalized as on TF.
void write_loss(CodeWriter& w, const ir::Graph& g, const ir::DimTable& t, const ir::Mark& m) {
  const ir::Node& n = g.node(m.node);
  std::string options;
  if (const double* s = n.attrs.find<ir::attr::Scale>())
    absl::StrAppend(&options, ", scale=", PyValue(*s).repr());
  if (const bool* z = n.attrs.find<ir::attr::Normalize>(); z && *z)
    absl::StrAppend(&options, ", use_normalized_loss=True");
  const std::string name = PyValue(m.name).repr(), error_name = PyValue(m.name + "_error").repr();
  if (n.kind == ir::NodeKind::kCrossEntropy) {
    // Per frame; RETURNN reports it per target frame, as TF does.
    w.line("ctx.mark_as_loss(", n.name, ", ", name, options, ")");
    const ir::Node& targets = g.node(n.inputs[1]);
    w.line("ctx.mark_as_loss(_frame_error(", g.node(n.inputs[0]).name, ", ", targets.name, ", ",
           t.id(*targets.type.sparse_dim), "), ", error_name, ", as_error=True)");
  } else if (n.kind == ir::NodeKind::kCtcLoss) {
    // Per sequence; reported per target label, as TF does; the error is the
    // greedy decoding's edits per target label.
    const ir::Node& targets = g.node(n.inputs[1]);
    const std::string norm = absl::StrCat(
        ", custom_inv_norm_factor=", t.id(targets_axis(targets.type)), ".get_size_tensor()");
    w.line("ctx.mark_as_loss(", n.name, ", ", name, norm, options, ")");
    w.line("ctx.mark_as_loss(_ctc_error(", g.node(n.inputs[0]).name, ", ", targets.name,
           ", axis=", t.id(n.attrs.get<ir::attr::Axis>()),
           ", targets_axis=", t.id(targets_axis(targets.type)), ", classes=", t.id(class_dim(g, n)),
           "), ", error_name, norm, ", as_error=True)");
  } else {  // regression and custom losses: their value as it is
    if (const bool* e = n.attrs.find<ir::attr::AsError>(); e && *e) options += ", as_error=True";
    w.line("ctx.mark_as_loss(", n.name, ", ", name, options, ")");
  }
}

}  // namespace

void write_train_step_body(CodeWriter& w, const ir::Graph& g, const ir::DimTable& t,
                           const ir::LoopAnalysis& loops, bool coupled) {
  write_step_code(w, g, t, loops);
  w.line("ctx = rf.get_run_ctx()");
  if (coupled)
    w.line("ctx.mark_as_loss(_coupled_weight_decay(model, _param_options), \"weight_decay\")");
  for (const ir::Mark& m : g.marks()) {
    if (m.kind == ir::Mark::Kind::kLoss) write_loss(w, g, t, m);
  }
  // The marked outputs: RETURNN ignores train_step's result; tests and tools read it.
  PyValue outputs = PyValue::dict();
  for (const ir::Mark& m : g.marks()) {
    if (m.kind == ir::Mark::Kind::kOutput)
      outputs.append(m.name, PyValue::ref(g.node(m.node).name));
  }
  w.line("return ", outputs.repr());
}

}  // namespace retc::emit::torch
