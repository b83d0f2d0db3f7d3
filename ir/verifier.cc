#include "ir/verifier.h"

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "ir/diagnostic.h"
#include "ir/loops.h"
#include "ir/status_macros.h"

namespace retc::ir {
namespace {

absl::Status node_error(const Graph& g, size_t i, absl::string_view what) {
  const Node& n = g.nodes()[i];
  std::string where = absl::StrCat("node %", i, " (", node_kind_name(n.kind));
  if (!n.module_path.empty()) absl::StrAppend(&where, " in '", n.module_path, "'");
  where += ")";
  return user_error(n.loc, absl::StrCat(where, ": ", what));
}

// Why a param-init node may not read `in` (empty: it may). A step node of a
// pure kind without inputs (a constant, seeded random numbers) has the same
// value in either stage.
std::string param_init_violation(const Node& in) {
  if (in.stage != Stage::kStep) return "";
  const KindFacts& f = kind_facts(in.kind);
  if (f.stage == StageClass::kAny && in.inputs.empty()) return "";
  if (f.stage == StageClass::kAny) return "a param-init node may not read a step node";
  return absl::StrCat("a param-init node may not ", f.step_reason);
}

}  // namespace

absl::Status verify_stage_rules(const Graph& g) {
  // A user's initial value is computed in stage param-init: its own kind
  // must allow it, as its inputs' must (below).
  for (const Param& p : g.params()) {
    const int32_t ref = p.options.initial.node;
    if (ref < 0 || static_cast<size_t>(ref) >= g.size()) continue;
    const KindFacts& f = kind_facts(g.nodes()[ref].kind);
    if (f.stage == StageClass::kStep) {
      return node_error(
          g, ref,
          absl::StrCat("the initial value of param '", p.path, "' may not ", f.step_reason, "\n",
                       p.loc.str(), ": note: the param is created here"));
    }
  }
  for (size_t i = 0; i < g.size(); ++i) {
    const Node& n = g.nodes()[i];
    if (n.stage != Stage::kParamInit) continue;
    // The one rule assign-stages follows too (KindFacts::stage).
    if (kind_facts(n.kind).stage == StageClass::kStep) {
      return node_error(
          g, i, absl::StrCat("a ", node_kind_name(n.kind), " node cannot be in stage param-init"));
    }
    for (NodeId in : n.inputs) {
      std::string v = param_init_violation(g.node(in));
      if (!v.empty()) {
        const Node& src = g.node(in);
        return node_error(g, i,
                          absl::StrCat(v, "\n", src.loc.str(), ": note: %", in.index, " (",
                                       node_kind_name(src.kind), ") is created here"));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status verify(const Graph& g) {
  RETURN_IF_ERROR(verify_stage_rules(g));
  RETURN_IF_ERROR(analyze_loops(g).status());
  absl::flat_hash_set<std::string> paths;
  for (const Param& p : g.params()) {
    if (p.path.empty()) return absl::InvalidArgumentError("a param has an empty path");
    if (!paths.insert(p.path).second) {
      return user_error(p.loc, absl::StrCat("duplicate param path '", p.path, "'"));
    }
  }
  std::vector<bool> param_read(g.params().size(), false);
  absl::flat_hash_set<std::string> names;
  for (size_t i = 0; i < g.size(); ++i) {
    const Node& n = g.nodes()[i];
    for (NodeId in : n.inputs) {
      if (!in.valid() || static_cast<size_t>(in.index) >= i) {
        return node_error(g, i, absl::StrCat("input %", in.index, " does not precede the node"));
      }
    }
    NodeSpec spec{n.attrs,
                  n.loc,
                  n.module_path,
                  n.stage,
                  n.param,
                  n.kind == NodeKind::kData ? std::optional<TensorType>(n.type) : std::nullopt};
    auto type = infer_type(g, n.kind, n.inputs, spec);
    if (!type.ok()) return node_error(g, i, type.status().message());
    if (!(*type == n.type)) {
      return node_error(g, i,
                        absl::StrCat("stored type ", n.type.describe(),
                                     " differs from inferred type ", type->describe()));
    }
    if (n.kind == NodeKind::kParam) {
      if (param_read[n.param.index]) {
        return node_error(g, i,
                          absl::StrCat("param '", g.param(n.param).path, "' is read by two nodes"));
      }
      param_read[n.param.index] = true;
    }
    if (!n.name.empty()) {
      if (!names.insert(n.name).second) {
        return node_error(g, i, absl::StrCat("the name '", n.name, "' is used twice"));
      }
    }
  }
  for (const Param& p : g.params()) {
    for (int32_t ref : {p.options.init_node, p.options.initial.node}) {
      if (ref < 0) continue;
      if (static_cast<size_t>(ref) >= g.size()) {
        return absl::InvalidArgumentError(
            absl::StrCat("param '", p.path, "': initial value refers to no node"));
      }
      const Node& n = g.nodes()[ref];
      // The user's subgraph (initial.node) becomes param-init in assign-stages.
      if (ref == p.options.init_node && n.stage != Stage::kParamInit) {
        return node_error(g, ref,
                          absl::StrCat("the initial value of param '", p.path,
                                       "' must be computed in stage param-init\n", p.loc.str(),
                                       ": note: the param is created here"));
      }
      if (n.type.dims != p.dims) {
        return node_error(g, ref,
                          absl::StrCat("the initial value of param '", p.path, "' has dims ",
                                       describe(n.type.dims), ", expected ", describe(p.dims)));
      }
    }
  }
  absl::flat_hash_set<std::string> mark_names[3];
  for (const Mark& m : g.marks()) {
    if (!m.node.valid() || static_cast<size_t>(m.node.index) >= g.size()) {
      return absl::InvalidArgumentError(absl::StrCat("mark '", m.name, "' refers to no node"));
    }
    if (m.name.empty()) {
      return user_error(m.loc, "a mark has an empty name");
    }
    if (!mark_names[static_cast<int>(m.kind)].insert(m.name).second) {
      return user_error(m.loc,
                        absl::StrCat(mark_kind_name(m.kind), " name '", m.name, "' is used twice"));
    }
  }
  return absl::OkStatus();
}

}  // namespace retc::ir
