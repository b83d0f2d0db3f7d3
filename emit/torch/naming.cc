#include "emit/torch/naming.h"

#include "absl/strings/str_cat.h"

namespace retc::emit::torch {

absl::StatusOr<bool> naming(ir::Graph& g) {
  bool changed = false;
  for (size_t i = 0; i < g.size(); ++i) {
    if (!g.nodes()[i].name.empty()) continue;
    g.set_name(g.id_of(i), absl::StrCat("n", i, "_", node_kind_name(g.nodes()[i].kind)));
    changed = true;
  }
  return changed;
}

}  // namespace retc::emit::torch
