#include "emit/tf/legalize.h"

#include <optional>

#include "absl/strings/str_cat.h"

namespace retc::emit::tf {
namespace {

absl::Status user_error(const ir::Node& n, absl::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat(n.loc.str(), ": error: ", node_kind_name(n.kind),
                   n.module_path.empty() ? "" : " in '" + n.module_path + "'", ": ", what));
}

}  // namespace

absl::StatusOr<bool> legalize(ir::Graph& g) {
  std::vector<bool> is_loss(g.size(), false);
  for (const ir::Mark& m : g.marks()) {
    if (m.kind == ir::Mark::Kind::kLoss) is_loss[m.node.index] = true;
  }
  std::vector<int> uses(g.size(), 0);
  for (const ir::Node& n : g.nodes()) {
    for (ir::NodeId in : n.inputs) ++uses[in.index];
  }
  std::optional<bool> decoupled;  // of the weight decay, once a param has some
  for (size_t i = 0; i < g.size(); ++i) {
    const ir::Node& n = g.nodes()[i];
    const ir::KindFacts& facts = ir::kind_facts(n.kind);
    if (facts.target_input >= 0) {
      const ir::Node& target = g.node(n.inputs[facts.target_input]);
      if (target.kind != ir::NodeKind::kData) {
        return user_error(
            n, absl::StrCat(n.kind == ir::NodeKind::kRegressionLoss ? "the target" : "targets",
                            " must be extern data"));
      }
      if (!is_loss[i] || uses[i] > 0)
        return user_error(n, "the result may only be marked as a loss, not used further");
    }
    if (n.kind == ir::NodeKind::kCrossEntropy) {
      // RETURNN's "ce" loss is a softmax over the one feature dim.
      const ir::Dim& classes = *g.node(n.inputs[1]).type.sparse_dim;
      for (const ir::Dim& d : g.node(n.inputs[0]).type.dims) {
        if (d.is_feature_like() && d != classes) {
          return user_error(n, absl::StrCat("logits may have no feature dim besides the classes ",
                                            classes.describe(), ", got ", d.describe()));
        }
      }
    }
    if (n.kind == ir::NodeKind::kWeightNoise && g.node(n.inputs[0]).kind != ir::NodeKind::kParam) {
      return user_error(
          n,
          "weight noise applies to a param directly (register it before other reparametrizations)");
    }
    if (n.kind == ir::NodeKind::kCustomLoss && !is_loss[i])
      return user_error(n, "the result must be marked as a loss");
    if (n.kind == ir::NodeKind::kParam) {
      const ir::Param& p = g.param(n.param);
      const ir::WeightDecay& wd = p.options.weight_decay;
      if (wd.value != 0.0) {
        if (decoupled && *decoupled == wd.coupled) {
          return absl::InvalidArgumentError(
              absl::StrCat(p.loc.str(), ": error: param '", p.path,
                           "': RETURNN applies weight decay either all coupled or all decoupled "
                           "(global decouple_constraints); this model mixes both"));
        }
        decoupled = !wd.coupled;
      }
    }
  }
  return false;
}

}  // namespace retc::emit::tf
