#include "compiler/passes/expand_parametrizations.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "ir/diagnostic.h"
#include "ir/status_macros.h"

namespace retc::passes {
namespace {

// Adds a node or returns an internal error naming this pass.
absl::StatusOr<ir::NodeId> add(ir::Graph& g, ir::NodeKind kind, std::vector<ir::NodeId> inputs,
                               ir::NodeSpec spec) {
  auto id = g.add(kind, std::move(inputs), std::move(spec));
  if (!id.ok()) {
    return absl::InternalError(absl::StrCat("expand_parametrizations: ", id.status().message()));
  }
  return id;
}

absl::Status expand_weight_norm(ir::Graph& g, ir::NodeId id) {
  const ir::Node n = g.node(id);  // copy: g.add may reallocate
  const ir::Node& x = g.node(n.inputs[0]);
  if (x.kind != ir::NodeKind::kParam) {
    return ir::user_error(
        n, "weight norm applies to a param directly (register it before other reparametrizations)");
  }
  const std::vector<ir::Dim> axes = n.attrs.get<ir::attr::Axes>();
  const ir::ParamId vid = x.param;
  const ir::Param v = g.param(vid);
  ir::NodeSpec base;
  base.loc = n.loc;
  base.module_path = n.module_path;

  // Param-init: the initial value of v (its node, or its constant), and ‖·‖.
  ir::NodeId v_init;
  if (v.options.init_node >= 0) {
    v_init = ir::NodeId{v.options.init_node};
  } else {
    ir::NodeSpec c = base;
    c.stage = ir::Stage::kParamInit;
    c.attrs = {ir::attr::Value{v.options.initial.value}, ir::attr::Shape{v.dims}};
    ASSIGN_OR_RETURN(auto cid, add(g, ir::NodeKind::kConstant, {}, std::move(c)));
    v_init = cid;
  }
  ir::NodeSpec norm_init = base;
  norm_init.stage = ir::Stage::kParamInit;
  norm_init.attrs = {ir::attr::Axes{axes}};
  ASSIGN_OR_RETURN(auto g_init, add(g, ir::NodeKind::kNorm, {v_init}, std::move(norm_init)));

  // The new param g.
  ir::Param gp;
  gp.path = v.path + "_g";
  gp.dims = g.node(g_init).type.dims;
  gp.dtype = v.dtype;
  gp.kind = ir::ParamKind::kNormScale;
  gp.loc = n.loc;
  gp.options.initial = ir::Initializer::constant(1.0);  // replaced by init_node
  gp.options.init_node = g_init.index;
  gp.options.trainable = v.options.trainable;
  gp.options.lr_multiplier = v.options.lr_multiplier;
  gp.options.gradient_clip = v.options.gradient_clip;
  gp.options.device = v.options.device;
  for (const ir::Param& p : g.params()) {
    if (p.path == gp.path) {
      return ir::user_error(
          n, absl::StrCat("weight norm needs the param name '", gp.path, "', which is taken"));
    }
  }
  ir::ParamId gid = g.add_param(std::move(gp));
  ir::NodeSpec read = base;
  read.param = gid;
  ASSIGN_OR_RETURN(auto g_node, add(g, ir::NodeKind::kParam, {}, std::move(read)));

  // Step: g · v / ‖v‖.
  ir::NodeSpec norm_step = base;
  norm_step.attrs = {ir::attr::Axes{axes}};
  ASSIGN_OR_RETURN(auto v_norm, add(g, ir::NodeKind::kNorm, {n.inputs[0]}, std::move(norm_step)));

  // When every user contracts exactly the norm axes (a Linear's dot over
  // its in dim), fold the scale into the result: x·(g v/‖v‖) = (x·v)·(g/‖v‖).
  // The weight-sized w is never materialized: per step that saves a write
  // and a read of the weight (and the same in the backward pass).
  std::vector<size_t> users;
  bool foldable = true;
  for (size_t i = 0; i < g.size(); ++i) {
    const ir::Node& u = g.nodes()[i];
    if (std::find(u.inputs.begin(), u.inputs.end(), id) == u.inputs.end()) continue;
    users.push_back(i);
    const auto* reduce = u.attrs.find<ir::attr::Reduce>();
    foldable = foldable && u.kind == ir::NodeKind::kDot && u.inputs.size() == 2 &&
               u.inputs[0] != u.inputs[1] && reduce && reduce->size() == axes.size() &&
               std::all_of(axes.begin(), axes.end(),
                           [&](const ir::Dim& a) { return ir::index_of(*reduce, a) >= 0; });
  }
  for (const ir::Mark& m : g.marks()) foldable = foldable && m.node != id;
  if (foldable && !users.empty()) {
    ASSIGN_OR_RETURN(auto scale, add(g, ir::NodeKind::kDiv, {g_node, v_norm}, base));
    for (size_t i : users) {
      const ir::Node u = g.nodes()[i];  // copy: g.add may reallocate
      std::vector<ir::NodeId> inputs = u.inputs;
      for (ir::NodeId& in : inputs) {
        if (in == id) in = n.inputs[0];
      }
      ir::NodeSpec dot_spec{u.attrs, u.loc, u.module_path, u.stage};
      ASSIGN_OR_RETURN(auto dot, add(g, ir::NodeKind::kDot, inputs, std::move(dot_spec)));
      ir::NodeSpec mul_spec{{}, u.loc, u.module_path, u.stage};
      ASSIGN_OR_RETURN(auto scaled, add(g, ir::NodeKind::kMul, {dot, scale}, std::move(mul_spec)));
      g.replace_all_uses(g.id_of(i), scaled);
    }
    g.replace_all_uses(id, n.inputs[0]);  // only the replaced, now dead dots read it
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(auto unit, add(g, ir::NodeKind::kDiv, {n.inputs[0], v_norm}, base));
  ASSIGN_OR_RETURN(auto w, add(g, ir::NodeKind::kMul, {unit, g_node}, base));
  g.replace_all_uses(id, w);
  return absl::OkStatus();
}

// Weight dropout of anything but a param's own (possibly noised) value, e.g.
// of a weight-normed weight, is dropout over all its dims. On a param, weight
// noise and dropout stay: a target applies them to the param's value (TF:
// options of the variable; an eager target: at each step).
absl::Status expand_weight_dropout(ir::Graph& g, ir::NodeId id, bool& changed) {
  const ir::Node n = g.node(id);
  const ir::Node& x = g.node(n.inputs[0]);
  if (x.kind == ir::NodeKind::kParam ||
      (x.kind == ir::NodeKind::kWeightNoise && g.node(x.inputs[0]).kind == ir::NodeKind::kParam)) {
    return absl::OkStatus();
  }
  ir::NodeSpec spec;
  spec.loc = n.loc;
  spec.module_path = n.module_path;
  spec.attrs = {ir::attr::Rate{n.attrs.get<ir::attr::Rate>()}, ir::attr::Axes{x.type.dims}};
  ASSIGN_OR_RETURN(auto d, add(g, ir::NodeKind::kDropout, {n.inputs[0]}, std::move(spec)));
  g.replace_all_uses(id, d);
  changed = true;
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<bool> expand_parametrizations(ir::Graph& g, const ExpandParametrizationsOptions&) {
  bool changed = false;
  const size_t n = g.size();  // nodes added here need no expansion
  for (size_t i = 0; i < n; ++i) {
    ir::NodeId id = g.id_of(i);
    // Only the parametrization kinds are rewritten; no other kind needs a case.
    const ir::NodeKind kind = g.node(id).kind;
    if (kind == ir::NodeKind::kWeightNorm) {
      RETURN_IF_ERROR(expand_weight_norm(g, id));
      changed = true;
    } else if (kind == ir::NodeKind::kWeightDropout) {
      RETURN_IF_ERROR(expand_weight_dropout(g, id, changed));
    }
  }
  if (changed) g.sort_topologically();
  return changed;
}

}  // namespace retc::passes
