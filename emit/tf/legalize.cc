#include "emit/tf/legalize.h"

#include <optional>

#include "absl/strings/str_cat.h"
#include "compiler/passes/dce.h"
#include "ir/diagnostic.h"
#include "ir/status_macros.h"

namespace retc::emit::tf {
namespace {

// Whether no input of `n` has all of its dims.
bool outer_broadcast(const ir::Graph& g, const ir::Node& n) {
  for (ir::NodeId in : n.inputs) {
    if (g.node(in).type.dims.size() == n.type.dims.size()) return false;
  }
  return true;
}

// RETURNN's switch cannot broadcast all of its inputs: where(c, a, b) with
// none of them over all the result's dims becomes where(c, a * 1, b), the
// constant 1 over the dims `a` lacks (a float branch; else the user's error).
absl::Status broadcast_where(ir::Graph& g, ir::NodeId id) {
  const ir::Node n = g.node(id);  // copy: g.add may reallocate
  const ir::Node& a = g.node(n.inputs[1]);
  if (a.type.dtype != ir::DType::kFloat32 || a.type.sparse_dim) {
    return ir::user_error(n, absl::StrCat("none of the condition and the branches has all of the "
                                          "result's dims ",
                                          ir::describe(n.type.dims),
                                          ", which RETURNN's switch needs for non-float branches; "
                                          "give one of them all these dims"));
  }
  std::vector<ir::Dim> missing;
  std::vector<ir::NodeId> sizes;
  for (const ir::Dim& d : n.type.dims) {
    if (ir::index_of(a.type.dims, d) >= 0) continue;
    missing.push_back(d);
    if (!d.is_dynamic() || d.is_batch()) continue;
    for (ir::NodeId in : n.inputs) {
      if (ir::index_of(g.node(in).type.dims, d) >= 0) {
        sizes.push_back(in);
        break;
      }
    }
  }
  ir::NodeSpec spec;
  spec.loc = n.loc;
  spec.module_path = n.module_path;
  spec.attrs = {ir::attr::Value{1.0}, ir::attr::Shape{missing}};
  auto ones = g.add(ir::NodeKind::kConstant, sizes, spec);
  if (!ones.ok()) return ones.status();
  spec.attrs = {};
  auto full = g.add(ir::NodeKind::kMul, {n.inputs[1], *ones}, spec);
  if (!full.ok()) return full.status();
  spec.attrs = n.attrs;
  auto where = g.add(ir::NodeKind::kWhere, {n.inputs[0], *full, n.inputs[2]}, spec);
  if (!where.ok()) return where.status();
  g.replace_all_uses(id, *where);
  return absl::OkStatus();
}

// Whether pool node `n`'s input has no dim besides the batch and the pooled
// axes: RETURNN's pool layer pools [batch, axes..., one feature dim], and
// takes a static axis for that feature dim when there is no other.
bool pool_lacks_channel(const ir::Graph& g, const ir::Node& n) {
  if (n.kind != ir::NodeKind::kPool) return false;
  const ir::TensorType& x = g.node(n.inputs[0]).type;
  if (x.dtype != ir::DType::kFloat32) return false;
  const auto& axes = n.attrs.get<ir::attr::Axes>();
  for (const ir::Dim& d : x.dims) {
    if (!d.is_batch() && ir::index_of(axes, d) < 0) return false;
  }
  return true;
}

// pool(x) on such an input becomes reduce_sum(pool(x * 1 over a channel of
// size 1), the channel): the same values.
absl::Status add_pool_channel(ir::Graph& g, ir::NodeId id) {
  const ir::Node n = g.node(id);  // copy: g.add may reallocate
  const ir::Dim channel = ir::Dim::feature_at("pool_channel", 1, n.loc);
  ir::NodeSpec spec;
  spec.loc = n.loc;
  spec.module_path = n.module_path;
  spec.attrs = {ir::attr::Value{1.0}, ir::attr::Shape{{channel}}};
  ASSIGN_OR_RETURN(ir::NodeId ones, g.add(ir::NodeKind::kConstant, {}, spec));
  spec.attrs = {};
  ASSIGN_OR_RETURN(ir::NodeId with_channel, g.add(ir::NodeKind::kMul, {n.inputs[0], ones}, spec));
  spec.attrs = n.attrs;
  ASSIGN_OR_RETURN(ir::NodeId pooled, g.add(ir::NodeKind::kPool, {with_channel}, spec));
  spec.attrs = {ir::attr::Mode{"sum"}, ir::attr::Axes{{channel}}};
  ASSIGN_OR_RETURN(ir::NodeId out, g.add(ir::NodeKind::kReduce, {pooled}, spec));
  g.replace_all_uses(id, out);
  return absl::OkStatus();
}

// Which nodes are marked as losses, and how often each is read.
struct Uses {
  std::vector<bool> is_loss;
  std::vector<int> uses;
  explicit Uses(const ir::Graph& g) : is_loss(g.size(), false), uses(g.size(), 0) {
    for (const ir::Mark& m : g.marks()) {
      if (m.kind == ir::Mark::Kind::kLoss) is_loss[m.node.index] = true;
    }
    for (const ir::Node& n : g.nodes()) {
      for (ir::NodeId in : n.inputs) ++uses[in.index];
    }
  }
};

// Whether `v` is computed from a param's weight noise or weight dropout.
bool reads_noised_param(const ir::Graph& g, ir::NodeId v) {
  std::vector<bool> seen(g.size(), false);
  std::vector<ir::NodeId> todo{v};
  while (!todo.empty()) {
    const ir::NodeId id = todo.back();
    todo.pop_back();
    if (seen[id.index]) continue;
    seen[id.index] = true;
    const ir::Node& n = g.node(id);
    if (n.kind == ir::NodeKind::kWeightNoise || n.kind == ir::NodeKind::kWeightDropout) return true;
    todo.insert(todo.end(), n.inputs.begin(), n.inputs.end());
  }
  return false;
}

// RETURNN's TF rules for node `i` (the losses', concat's, weight noise's):
// the user's error at their line, or OK.
absl::Status check_node(const ir::Graph& g, const Uses& u, size_t i) {
  const ir::Node& n = g.nodes()[i];
  // An assignment's value reads each param through its one read (net_dict.cc:
  // pinned), which RETURNN's variable layer with weight noise or dropout lacks.
  if (n.kind == ir::NodeKind::kParamAssign && reads_noised_param(g, n.inputs[1]))
    return ir::user_error(n,
                          "on the tf target, an assigned value cannot read a param with weight "
                          "noise or weight dropout (the torch target can: --backend torch)");
  const bool only_loss = u.is_loss[i] && u.uses[i] == 0;
  // Targets may be computed (RETURNN's "layer:" targets); cross-entropy and
  // CTC are also values (their own layers), a regression loss is not.
  if (n.kind == ir::NodeKind::kRegressionLoss && !only_loss)
    return ir::user_error(n, "the result may only be marked as a loss, not used further");
  if (n.kind == ir::NodeKind::kCrossEntropy && !only_loss &&
      (n.attrs.has<ir::attr::LabelSmoothing>() || n.attrs.has<ir::attr::FocalLossFactor>()))
    return ir::user_error(n,
                          "a cross-entropy value (not only marked as a loss) with label smoothing "
                          "or a focal loss factor: RETURNN's TF value layer has neither (the "
                          "torch target has: --backend torch)");
  if (n.kind == ir::NodeKind::kConcat && n.attrs.get<ir::attr::AxisA>().is_dynamic()) {
    // tf.concat of the padded tensors: a shorter sequence's second part
    // would start after the first part's padding, not after its end.
    return ir::user_error(
        n, absl::StrCat("concat along the dynamic axis ", n.attrs.get<ir::attr::AxisA>().describe(),
                        ": RETURNN's TF concat layer puts the second part after the first "
                        "part's padding, not after each sequence's end (the torch target "
                        "concatenates per sequence: --backend torch); on TF, put a static axis "
                        "first or use nn::pad"));
  }
  if (n.kind == ir::NodeKind::kCrossEntropy) {
    // RETURNN's "ce" loss is a softmax over the one feature dim.
    const ir::Dim& classes = *g.node(n.inputs[1]).type.sparse_dim;
    for (const ir::Dim& d : g.node(n.inputs[0]).type.dims) {
      if (d.is_feature_like() && d != classes) {
        return ir::user_error(n, absl::StrCat("logits may have no feature dim besides the classes ",
                                              classes.describe(), ", got ", d.describe()));
      }
    }
  }
  if (n.kind == ir::NodeKind::kWeightNoise && g.node(n.inputs[0]).kind != ir::NodeKind::kParam) {
    return ir::user_error(
        n,
        "weight noise applies to a param directly (register it before other reparametrizations)");
  }
  if (n.kind == ir::NodeKind::kCustomLoss && !u.is_loss[i])
    return ir::user_error(n, "the result must be marked as a loss");
  if (n.kind == ir::NodeKind::kMaskedSelect) {
    // RETURNN's masked_computation packs whole frames: one flag per sequence and frame.
    const ir::TensorType& mask = g.node(n.inputs[1]).type;
    const ir::Dim& axis = n.attrs.get<ir::attr::Axis>();
    for (const ir::Dim& d : mask.dims) {
      if (!d.is_batch() && d != axis) {
        return ir::user_error(
            n, absl::StrCat("the tf target packs whole frames (RETURNN's masked_computation): "
                            "the mask must be over the batch and ",
                            axis.describe(), " only, got ", mask.describe(),
                            "; reduce it, or use --backend torch"));
      }
    }
  }
  if (n.kind == ir::NodeKind::kPool) {
    // tf.nn.pool refuses windows that skip frames (its CPU and GPU kernels differ).
    const auto& size = n.attrs.get<ir::attr::Size>();
    const auto& strides = n.attrs.get<ir::attr::Strides>();
    for (size_t k = 0; k < size.size() && k < strides.size(); ++k) {
      if (strides[k] > size[k]) {
        return ir::user_error(
            n, absl::StrCat("a stride of ", strides[k], " over a window of ", size[k],
                            " skips frames, which the tf target's pooling (tf.nn.pool) refuses; "
                            "use a window at least the stride, or --backend torch"));
      }
    }
  }
  return absl::OkStatus();
}

// RETURNN applies weight decay either all coupled or all decoupled.
absl::Status check_weight_decay(const ir::Graph& g) {
  std::optional<bool> decoupled;  // of the weight decay, once a param has some
  for (const ir::Param& p : g.params()) {
    const ir::WeightDecay& wd = p.options.weight_decay;
    if (wd.value == 0.0) continue;
    if (decoupled && *decoupled == wd.coupled) {
      return ir::user_error(
          p.loc, absl::StrCat("param '", p.path,
                              "': RETURNN applies weight decay either all coupled or all decoupled "
                              "(global decouple_constraints); this model mixes both"));
    }
    decoupled = !wd.coupled;
  }
  return absl::OkStatus();
}

// The rewrites, after all checks passed: a loss that is also a value gets
// an unmarked copy for its users (RETURNN's value layer; the marked one is
// its loss layer); a where that broadcasts beyond every input gets the
// missing dims from a constant.
absl::StatusOr<bool> rewrite(ir::Graph& g, const Uses& u) {
  bool changed = false;
  const size_t n = g.size();
  for (size_t i = 0; i < n; ++i) {
    const ir::Node& node = g.nodes()[i];
    if ((node.kind != ir::NodeKind::kCrossEntropy && node.kind != ir::NodeKind::kCtcLoss) ||
        !u.is_loss[i] || u.uses[i] == 0)
      continue;
    ir::NodeSpec spec;
    spec.attrs = node.attrs;
    spec.loc = node.loc;
    spec.module_path = node.module_path;
    const std::vector<ir::NodeId> inputs = node.inputs;
    const ir::NodeKind kind = node.kind;
    ASSIGN_OR_RETURN(ir::NodeId value, g.add(kind, inputs, spec));
    g.replace_input_uses(g.id_of(i), value);
    changed = true;
  }
  for (size_t i = 0; i < n; ++i) {
    if (g.nodes()[i].kind != ir::NodeKind::kWhere || !outer_broadcast(g, g.nodes()[i])) continue;
    RETURN_IF_ERROR(broadcast_where(g, g.id_of(i)));
    changed = true;
  }
  for (size_t i = 0; i < n; ++i) {
    if (!pool_lacks_channel(g, g.nodes()[i])) continue;
    RETURN_IF_ERROR(add_pool_channel(g, g.id_of(i)));
    changed = true;
  }
  if (changed) {
    g.sort_topologically();
    RETURN_IF_ERROR(passes::dce(g).status());  // the replaced nodes
  }
  return changed;
}

}  // namespace

absl::StatusOr<bool> legalize(ir::Graph& g) {
  for (const ir::Checkpoint& c : g.checkpoints()) {
    return ir::user_error(
        c.loc, absl::StrCat("checkpoint '", c.module_path,
                            "': the tf target has no gradient checkpointing of a module (RETURNN's "
                            "net-dict layers have no such option); train with --backend torch"));
  }
  const Uses u(g);
  for (size_t i = 0; i < g.size(); ++i) RETURN_IF_ERROR(check_node(g, u, i));
  RETURN_IF_ERROR(check_weight_decay(g));
  return rewrite(g, u);
}

}  // namespace retc::emit::tf
