#include "emit/torch/legalize.h"

#include "absl/strings/str_cat.h"
#include "ir/diagnostic.h"
#include "ir/format.h"
#include "ir/loops.h"
#include "ir/status_macros.h"

namespace retc::emit::torch {

absl::string_view rf_activation(absl::string_view func) {
  static const std::pair<absl::string_view, absl::string_view> kFuncs[] = {
      {"relu", "rf.relu"},     {"tanh", "rf.tanh"},    {"sigmoid", "rf.sigmoid"},
      {"gelu", "rf.gelu"},     {"elu", "rf.elu"},      {"swish", "rf.swish"},
      {"silu", "rf.silu"},     {"exp", "rf.exp"},      {"log", "rf.log"},
      {"abs", "rf.abs"},       {"sqrt", "rf.sqrt"},    {"rsqrt", "rf.rsqrt"},
      {"square", "rf.square"}, {"negative", "rf.neg"}, {"softplus", "_softplus"},
      {"sin", "rf.sin"},       {"cos", "rf.cos"}};
  for (const auto& [f, rf] : kFuncs) {
    if (f == func) return rf;
  }
  return "";
}

namespace {

// Why this target cannot lower `n`; empty: it can. Every other kind has its
// lowering (lower.cc: the build fails for a kind without one); these kinds
// are lowered for some attributes only, or never.
std::string not_lowered(const ir::Node& n) {
  using K = ir::NodeKind;
  if (n.kind == K::kActivation && rf_activation(n.attrs.get<ir::attr::Func>()).empty())
    return absl::StrCat("the activation ", ir::quote(n.attrs.get<ir::attr::Func>()));
  if (n.kind == K::kRawLayer) return "raw_layer (a RETURNN TF net-dict layer)";
  // RETURNN's torch frontend has no "same" padding for it.
  if (n.kind == K::kTransposedConv && n.attrs.get<ir::attr::Padding>() == "same")
    return "a transposed convolution with \"same\" padding";
  if (n.kind == K::kWeightNorm)  // expand-parametrizations expanded it
    return absl::StrCat(node_kind_name(n.kind), " nodes");
  return "";
}

// Why this target cannot give `p` what it asks for; empty: it can.
std::string unsupported_option(const ir::Param& p) {
  if (!p.options.device.empty()) {
    return absl::StrCat("a device of its own (", ir::quote(p.options.device),
                        "): RETURNN's torch engine puts the whole model on one device "
                        "(the tf target can: --backend tf)");
  }
  return "";
}

}  // namespace

absl::StatusOr<bool> legalize(ir::Graph& g) {
  for (const ir::Node& n : g.nodes()) {
    if (n.kind == ir::NodeKind::kRawLayer) {
      return ir::user_error(n,
                            "a raw RETURNN layer is a layer of TF's net dict: the torch target has "
                            "none (the tf target: --backend tf)");
    }
    std::string why = not_lowered(n);
    if (!why.empty()) {
      return ir::user_error(n, absl::StrCat("the torch target does not lower ", why,
                                            " yet (the tf target does: --backend tf)"));
    }
    if (n.kind == ir::NodeKind::kParam) {
      const ir::Param& p = g.param(n.param);
      if (std::string o = unsupported_option(p); !o.empty()) {
        return ir::user_error(p.loc, absl::StrCat("param '", p.path,
                                                  "': the torch target does not "
                                                  "support ",
                                                  o));
      }
    }
  }
  return false;
}

absl::Status check_exportable(const ir::Graph& g) {
  ASSIGN_OR_RETURN(const ir::LoopAnalysis loops, ir::analyze_loops(g));
  for (size_t i = 0; i < g.size(); ++i) {
    const ir::Node& n = g.nodes()[i];
    const int32_t l = loops.loop_of[i];
    if (l >= 0) {
      const ir::Loop& loop = loops.loops[l];
      if (loop.end.valid() || !loop.axis || loop.axis->is_dynamic()) {
        return ir::user_error(
            n, absl::StrCat("ONNX export: computed in a loop over ",
                            loop.axis ? loop.axis->describe() : std::string("a new axis"),
                            ", which the torch target writes as a Python loop: traced for "
                            "ONNX, it would be unrolled at the example's length (loops over a "
                            "static axis export)"));
      }
    }
    if (n.kind == ir::NodeKind::kCond && g.node(n.inputs[0]).kind != ir::NodeKind::kTrainFlag) {
      return ir::user_error(n,
                            "ONNX export: nn::cond on a computed predicate is a Python `if` on "
                            "the torch target: traced for ONNX, the example's branch would be "
                            "baked in (use nn::where)");
    }
  }
  return absl::OkStatus();
}

}  // namespace retc::emit::torch
