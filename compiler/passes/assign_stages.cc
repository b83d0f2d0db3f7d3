#include "compiler/passes/assign_stages.h"

#include "ir/status_macros.h"
#include "ir/verifier.h"

namespace retc::passes {

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
    bool init = ir::kind_facts(node.kind).stage == ir::StageClass::kAny && !marked[i] &&
                uses[i] > 0 && init_uses[i] + param_init_users[i] == uses[i];
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
  RETURN_IF_ERROR(ir::verify_stage_rules(g));
  return changed;
}

}  // namespace retc::passes
