#include "compiler/passes/assign_stages.h"

#include "ir/verifier.h"

namespace retc::passes {
namespace {

bool may_be_param_init(ir::NodeKind k) {
  switch (k) {
    case ir::NodeKind::kAdd:
    case ir::NodeKind::kSub:
    case ir::NodeKind::kMul:
    case ir::NodeKind::kDiv:
    case ir::NodeKind::kDot:
    case ir::NodeKind::kActivation:
    case ir::NodeKind::kNorm:
    case ir::NodeKind::kRandom:
    case ir::NodeKind::kConstant:
    case ir::NodeKind::kReduce:
    case ir::NodeKind::kNormalize:
    case ir::NodeKind::kGather:
    case ir::NodeKind::kConcat:
    case ir::NodeKind::kSoftmax:
    case ir::NodeKind::kSlice:
    case ir::NodeKind::kSplitDims:
    case ir::NodeKind::kMergeDims:
    case ir::NodeKind::kRange:
    case ir::NodeKind::kCompare:
    case ir::NodeKind::kCast:
    case ir::NodeKind::kWhere:
      return true;
    case ir::NodeKind::kData:
    case ir::NodeKind::kParam:
    case ir::NodeKind::kDropout:
    case ir::NodeKind::kLstm:
    case ir::NodeKind::kCrossEntropy:
    case ir::NodeKind::kWeightNorm:
    case ir::NodeKind::kWeightDropout:
    case ir::NodeKind::kWeightNoise:
    case ir::NodeKind::kScaleGrad:
    case ir::NodeKind::kSelfAttention:
    case ir::NodeKind::kConv:
    case ir::NodeKind::kRegressionLoss:
    case ir::NodeKind::kPool:
    case ir::NodeKind::kBatchNorm:
    case ir::NodeKind::kCtcLoss:
    case ir::NodeKind::kShiftAxis:
    case ir::NodeKind::kSeqMask:
    case ir::NodeKind::kPosEncoding:
    case ir::NodeKind::kCustomLoss:
    case ir::NodeKind::kLoopUnstack:
    case ir::NodeKind::kLoopState:
    case ir::NodeKind::kLoopNext:
    case ir::NodeKind::kLoopStack:
    case ir::NodeKind::kTrainFlag:
      return false;
  }
  return false;
}

}  // namespace

absl::StatusOr<bool> assign_stages(ir::Graph& g, const AssignStagesOptions&) {
  const size_t n = g.size();
  std::vector<int> uses(n, 0), init_uses(n, 0);
  std::vector<bool> marked(n, false);
  for (const ir::Mark& m : g.marks()) marked[m.node.index] = true;
  for (const ir::Param& p : g.params()) {
    for (int32_t ref : {p.options.init_node, p.options.initial.node}) {
      if (ref >= 0) {
        ++uses[ref];
        ++init_uses[ref];
      }
    }
  }
  for (const ir::Node& node : g.nodes()) {
    for (ir::NodeId in : node.inputs) ++uses[in.index];
  }
  std::vector<ir::Stage> stage(n, ir::Stage::kStep);
  // Users come after their inputs: decide users first, walking backwards.
  std::vector<int> param_init_users(n, 0);
  for (size_t i = n; i-- > 0;) {
    const ir::Node& node = g.nodes()[i];
    bool init = may_be_param_init(node.kind) && !marked[i] && uses[i] > 0 &&
                init_uses[i] + param_init_users[i] == uses[i];
    stage[i] = init ? ir::Stage::kParamInit : ir::Stage::kStep;
    if (init) {
      for (ir::NodeId in : node.inputs) ++param_init_users[in.index];
    }
  }
  bool changed = false;
  for (size_t i = 0; i < n; ++i) {
    if (g.nodes()[i].stage != stage[i]) {
      g.set_stage(g.id_of(i), stage[i]);
      changed = true;
    }
  }
  // A param-init node that reads data, the train flag or a param's current
  // value is the user's mistake; report it here, at their line.
  if (absl::Status s = ir::verify_stage_rules(g); !s.ok()) return s;
  return changed;
}

}  // namespace retc::passes
