#include "emit/tf/naming.h"

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "ir/diagnostic.h"
#include "ir/format.h"

namespace retc::emit::tf {
namespace {

// Who wants node i's name, for the message when two want the same: its
// first mark, the param it initializes, its extern data or its param (the
// order in which naming() gives the fixed names).
std::pair<std::string, ir::SourceLoc> claim_of(const ir::Graph& g, size_t i) {
  for (const ir::Mark& m : g.marks()) {
    if (static_cast<size_t>(m.node.index) == i) {
      return {absl::StrCat(ir::mark_kind_name(m.kind), " ", ir::quote(m.name)), m.loc};
    }
  }
  for (const ir::Param& p : g.params()) {
    if (p.options.init_node == static_cast<int32_t>(i))
      return {absl::StrCat("the initial value of param ", ir::quote(p.path)), p.loc};
  }
  const ir::Node& n = g.nodes()[i];
  if (n.kind == ir::NodeKind::kData)
    return {absl::StrCat("extern data ", ir::quote(n.attrs.get<ir::attr::Key>())), n.loc};
  const ir::Param& p = g.param(n.param);
  return {absl::StrCat("param ", ir::quote(p.path)), p.loc};
}

}  // namespace

std::string rel_pos_layer_name(const ir::Node& attention) { return attention.name + "_rel_pos"; }

std::string scope_of(const ir::Param& p) { return absl::StrReplaceAll(p.path, {{".", "/"}}); }

std::string variable_name(const ir::Param& p) { return scope_of(p) + "/param"; }

absl::StatusOr<bool> naming(ir::Graph& g) {
  absl::flat_hash_set<std::string> taken;
  for (const ir::Node& n : g.nodes()) {
    if (!n.name.empty()) taken.insert(n.name);
  }
  std::vector<std::string> wanted(g.size());
  // Marked nodes first, so `output` is never taken by an ordinary node.
  for (const ir::Mark& m : g.marks()) {
    // Extern data keeps its name (data:KEY); marked, it gets a copy layer of
    // the mark's name (emit_net_dict), which no other node may take.
    if (g.node(m.node).kind == ir::NodeKind::kData) {
      taken.insert(m.name);
      continue;
    }
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
      wanted[i] = "data:" + n.attrs.get<ir::attr::Key>();
    } else if (n.kind == ir::NodeKind::kParam) {
      wanted[i] = g.param(n.param).path;
    }
  }
  for (size_t i = 0; i < g.size(); ++i) {
    const std::string& w = wanted[i];
    if (w.empty() || taken.insert(w).second) continue;
    // Wanted twice: by an earlier node, or the name of a named node.
    size_t j = 0;
    while (j < i && wanted[j] != w) ++j;
    const auto [what, loc] = claim_of(g, i);
    std::string other = "a node named so already", note;
    if (j < i) {
      const auto [first_what, first_loc] = claim_of(g, j);
      other = first_what;
      note = absl::StrCat("\n", first_loc.str(), ": note: ", other, " wants it here");
    }
    return ir::user_error(
        loc, absl::StrCat("the RETURNN layer name ", ir::quote(w), " of ", what, " is wanted by ",
                          other, " too; rename one of them", note));
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
  // The encoding layer of a relative-positional self-attention is named
  // after it; a user's name may not take that name.
  for (const ir::Node& n : g.nodes()) {
    if (n.kind != ir::NodeKind::kSelfAttention || n.inputs.size() != 3) continue;
    if (taken.contains(rel_pos_layer_name(n))) {
      return ir::user_error(n, absl::StrCat("the layer name ", ir::quote(rel_pos_layer_name(n)),
                                            " of its relative positions is taken"));
    }
  }
  return changed;
}

std::vector<std::string> loop_layer_names(const ir::Graph& g, const ir::LoopAnalysis& loops) {
  if (loops.loops.empty()) return {};
  absl::flat_hash_set<std::string> names;
  for (const ir::Node& n : g.nodes()) names.insert(n.name);
  std::vector<std::string> out(loops.loops.size());
  // In node order, a loop is named when its first node (with a `loop`
  // attribute) is reached, after the module whose call made that node.
  for (const ir::Node& n : g.nodes()) {
    const int64_t* id = n.attrs.find<ir::attr::Loop>();
    if (!id || !out[*id].empty()) continue;
    std::string base = n.module_path.empty() ? "loop" : n.module_path + ".loop";
    std::string name = base;
    for (int k = 2; names.contains(name); ++k) name = absl::StrCat(base, "_", k);
    names.insert(name);
    out[*id] = std::move(name);
  }
  return out;
}

}  // namespace retc::emit::tf
