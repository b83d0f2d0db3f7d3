// Loop structure, derived from dataflow (loops are flat in the IR).
#include "ir/loops.h"

#include "absl/strings/str_cat.h"
#include "ir/diagnostic.h"

namespace retc::ir {

absl::StatusOr<int32_t> node_loop(NodeKind kind, const Attrs& attrs,
                                  const std::vector<NodeId>& inputs,
                                  const std::vector<int32_t>& loop) {
  const int64_t* id = attrs.find<attr::Loop>();
  auto err = [](auto&&... parts) { return absl::InvalidArgumentError(absl::StrCat(parts...)); };
  if (kind == NodeKind::kLoopUnstack || kind == NodeKind::kLoopState) {
    if (loop[inputs[0].index] >= 0)
      return err("reads a value inside loop ", loop[inputs[0].index], "; loops do not nest yet");
    return static_cast<int32_t>(*id);
  }
  if (kind == NodeKind::kLoopStack) {
    if (loop[inputs[0].index] != *id)
      return err("stacks a value that is not computed in loop ", *id);
    return -1;  // outside the loop
  }
  int32_t result = -1;
  for (NodeId in : inputs) {
    int32_t l = loop[in.index];
    if (l < 0) continue;
    if (result >= 0 && result != l) return err("mixes values of loops ", result, " and ", l);
    result = l;
  }
  const bool of_loop = kind == NodeKind::kLoopNext || kind == NodeKind::kLoopEnd ||
                       kind == NodeKind::kChoice || kind == NodeKind::kCumConcat;
  if (of_loop && result != *id)
    return err(kind == NodeKind::kLoopNext ? "the next value" : "the input",
               " is not computed in loop ", *id);
  return result;
}

absl::StatusOr<LoopAnalysis> analyze_loops(const Graph& g) {
  LoopAnalysis a;
  a.loop_of.assign(g.size(), -1);
  a.next_of_state.assign(g.size(), NodeId{});
  a.stacked.assign(g.size(), false);
  std::vector<int> nexts(g.size(), 0);
  for (size_t i = 0; i < g.size(); ++i) {
    const Node& n = g.nodes()[i];
    auto l = node_loop(n.kind, n.attrs, n.inputs, a.loop_of);
    if (!l.ok()) {
      return user_error(n.loc, absl::StrCat("node %", i, " (", node_kind_name(n.kind),
                                            "): ", l.status().message()));
    }
    a.loop_of[i] = *l;
    if (*l >= 0) {
      if (a.loops.size() <= static_cast<size_t>(*l)) a.loops.resize(*l + 1);
      a.loops[*l].members.push_back(g.id_of(i));
    }
    if (const int64_t* id = n.attrs.find<attr::Loop>()) {
      if (a.loops.size() <= static_cast<size_t>(*id)) a.loops.resize(*id + 1);
      const Dim* axis = n.attrs.find<attr::Axis>();
      if (axis && !a.loops[*id].axis) a.loops[*id].axis = *axis;
    }
    if (n.kind == NodeKind::kLoopNext) {
      ++nexts[n.inputs[0].index];
      a.next_of_state[n.inputs[0].index] = g.id_of(i);
    }
    if (n.kind == NodeKind::kLoopStack) a.stacked[n.inputs[0].index] = true;
    if (n.kind == NodeKind::kLoopEnd || n.kind == NodeKind::kChoice) {
      NodeId& slot = n.kind == NodeKind::kLoopEnd ? a.loops[*l].end : a.loops[*l].choice;
      if (slot.valid()) {
        return user_error(n.loc,
                          absl::StrCat("node %", i, " (", node_kind_name(n.kind), "): loop ", *l,
                                       n.kind == NodeKind::kLoopEnd ? " has an end already"
                                                                    : " has a choice already"));
      }
      slot = g.id_of(i);
    }
  }
  // Each state has exactly one next value (targets read it as the state's
  // value in the following frame).
  for (size_t i = 0; i < g.size(); ++i) {
    const Node& n = g.nodes()[i];
    if (n.kind == NodeKind::kLoopState && nexts[i] != 1) {
      return user_error(n.loc,
                        absl::StrCat("node %", i, " (loop_state): has ", nexts[i],
                                     " next values; a loop state needs exactly one (loop_next)"));
    }
  }
  return a;
}

}  // namespace retc::ir
