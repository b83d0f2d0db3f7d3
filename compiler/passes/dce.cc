#include "compiler/passes/dce.h"

#include <set>

namespace retc::passes {

absl::StatusOr<bool> dce(ir::Graph& g, const DceOptions&) {
  std::vector<bool> live = ir::root_mask(g);
  // A state's next value and a loop's end are read by the following frames
  // (no edge shows it): live when any node of their loop is.
  auto loop_of = [&](size_t i) -> int64_t {
    const ir::Node& n = g.nodes()[i];
    if (n.kind == ir::NodeKind::kLoopStack) return -1;
    const int64_t* l = n.attrs.find<ir::attr::Loop>();
    if (n.kind == ir::NodeKind::kLoopNext) return g.node(n.inputs[0]).attrs.get<ir::attr::Loop>();
    return l ? *l : -1;
  };
  for (bool grew = true; grew;) {
    grew = false;
    // Inputs precede their users, so one backward sweep finds everything live.
    for (size_t i = g.size(); i-- > 0;) {
      if (!live[i]) continue;
      for (ir::NodeId in : g.node(g.id_of(i)).inputs) live[in.index] = true;
    }
    std::set<int64_t> live_loops;
    for (size_t i = 0; i < g.size(); ++i) {
      if (live[i] && loop_of(i) >= 0) live_loops.insert(loop_of(i));
      // A stack reads its loop.
      const ir::Node& n = g.nodes()[i];
      if (live[i] && n.kind == ir::NodeKind::kLoopStack)
        live_loops.insert(n.attrs.get<ir::attr::Loop>());
    }
    for (size_t i = 0; i < g.size(); ++i) {
      const ir::NodeKind k = g.nodes()[i].kind;
      if (live[i] || (k != ir::NodeKind::kLoopNext && k != ir::NodeKind::kLoopEnd)) continue;
      if (live_loops.count(loop_of(i))) live[i] = grew = true;
    }
  }
  bool changed = false;
  for (bool l : live) changed |= !l;
  if (changed) g.compact(live);
  return changed;
}

}  // namespace retc::passes
