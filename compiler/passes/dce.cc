#include "compiler/passes/dce.h"

namespace retc::passes {

absl::StatusOr<bool> dce(ir::Graph& g, const DceOptions&) {
  std::vector<bool> live = ir::root_mask(g);
  // Inputs precede their users, so one backward sweep finds everything live.
  for (size_t i = g.size(); i-- > 0;) {
    ir::NodeId id = g.id_of(i);
    if (!live[i]) continue;
    live[i] = true;
    for (ir::NodeId in : g.node(id).inputs) live[in.index] = true;
  }
  bool changed = false;
  for (bool l : live) changed |= !l;
  if (changed) g.compact(live);
  return changed;
}

}  // namespace retc::passes
