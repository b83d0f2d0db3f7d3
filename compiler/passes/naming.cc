#include "compiler/passes/naming.h"

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"

namespace retc::passes {

absl::StatusOr<bool> naming(ir::Graph& g, const NamingOptions&) {
  absl::flat_hash_set<std::string> taken;
  for (const ir::Node& n : g.nodes()) {
    if (!n.name.empty()) taken.insert(n.name);
  }
  std::vector<std::string> wanted(g.size());
  // Marked nodes first, so `output` is never taken by an ordinary node.
  for (const ir::Mark& m : g.marks()) {
    std::string& w = wanted[m.node.index];
    if (w.empty() && g.node(m.node).name.empty()) w = m.name;
  }
  // A param's initial value: `<param path>.init`.
  for (const ir::Param& p : g.params()) {
    int32_t i = p.options.init_node;
    if (i >= 0 && wanted[i].empty() && g.nodes()[i].name.empty()) wanted[i] = p.path + ".init";
  }
  for (size_t i = 0; i < g.size(); ++i) {
    const ir::Node& n = g.nodes()[i];
    if (!n.name.empty() || !wanted[i].empty()) continue;
    // Data and params have fixed names; every other kind is named below.
    if (n.kind == ir::NodeKind::kData) {
      wanted[i] = "data:" + *n.attrs.get<std::string>("key");
    } else if (n.kind == ir::NodeKind::kParam) {
      wanted[i] = g.param(n.param).path;
    }
  }
  for (const std::string& w : wanted) {
    if (!w.empty() && !taken.insert(w).second) {
      return absl::InvalidArgumentError(absl::StrCat("layer name '", w, "' is wanted twice"));
    }
  }
  bool changed = false;
  // The next suffix to try per base name: numbering stays linear in the
  // number of nodes (a root-level `add` may occur thousands of times).
  absl::flat_hash_map<std::string, int> next_suffix;
  for (size_t i = 0; i < g.size(); ++i) {
    const ir::Node& n = g.nodes()[i];
    if (!n.name.empty()) continue;
    std::string name = wanted[i];
    if (name.empty()) {
      std::string base(ir::node_kind_name(n.kind));
      if (!n.module_path.empty()) base = n.module_path + "." + base;
      name = base;
      int& k = next_suffix[base];
      if (k == 0) k = 2;
      while (taken.contains(name)) name = absl::StrCat(base, "_", k++);
      taken.insert(name);
    }
    g.set_name(g.id_of(i), std::move(name));
    changed = true;
  }
  return changed;
}

}  // namespace retc::passes
