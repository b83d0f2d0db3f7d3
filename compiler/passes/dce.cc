#include "compiler/passes/dce.h"

namespace retc::passes {

absl::StatusOr<bool> dce(ir::Graph& g, const DceOptions&) {
  std::vector<bool> live(g.size(), false);
  // Inputs precede their users, so one backward sweep finds everything live.
  for (size_t i = g.size(); i-- > 0;) {
    ir::NodeId id = g.id_of(i);
    if (!live[i] && !ir::is_root(g, id)) continue;
    live[i] = true;
    for (ir::NodeId in : g.node(id).inputs) live[in.index] = true;
  }
  bool changed = false;
  for (bool l : live) changed |= !l;
  if (changed) g.compact(live);
  return changed;
}

}  // namespace retc::passes
