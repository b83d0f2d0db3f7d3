#include "ir/graph.h"

#include <functional>
#include <queue>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "ir/status_macros.h"

namespace retc::ir {

absl::StatusOr<NodeId> Graph::add(NodeKind kind, std::vector<NodeId> inputs, NodeSpec spec) {
  auto type = infer_type(*this, kind, inputs, spec);
  if (!type.ok()) return type.status();
  Node n{kind,       std::move(inputs),   std::move(spec.attrs),       *std::move(type),
         spec.stage, std::move(spec.loc), std::move(spec.module_path), spec.param,
         ""};
  nodes_.push_back(std::move(n));
  return id_of(nodes_.size() - 1);
}

absl::string_view mark_kind_name(Mark::Kind k) {
  switch (k) {
    case Mark::Kind::kOutput:
      return "output";
    case Mark::Kind::kLoss:
      return "loss";
    case Mark::Kind::kSearch:
      return "search";
  }
  return "";
}

std::optional<Mark::Kind> parse_mark_kind(absl::string_view s) {
  for (Mark::Kind k : {Mark::Kind::kOutput, Mark::Kind::kLoss, Mark::Kind::kSearch}) {
    if (mark_kind_name(k) == s) return k;
  }
  return std::nullopt;
}

ParamId Graph::add_param(Param p) {
  params_.push_back(std::move(p));
  return ParamId{static_cast<int32_t>(params_.size() - 1)};
}

void Graph::replace_all_uses(NodeId from, NodeId to) {
  for (Node& n : nodes_) {
    for (NodeId& in : n.inputs) {
      if (in == from) in = to;
    }
  }
  for (Mark& m : marks_) {
    if (m.node == from) m.node = to;
  }
  for (Param& p : params_) {
    if (p.options.init_node == from.index) p.options.init_node = to.index;
    if (p.options.initial.node == from.index) p.options.initial.node = to.index;
  }
}

void Graph::replace_input_uses(NodeId from, NodeId to) {
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (i == static_cast<size_t>(to.index)) continue;
    for (NodeId& in : nodes_[i].inputs) {
      if (in == from) in = to;
    }
  }
}

void Graph::compact(const std::vector<bool>& keep) {
  std::vector<int32_t> remap(nodes_.size(), -1);
  std::vector<Node> kept;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (!keep[i]) continue;
    remap[i] = static_cast<int32_t>(kept.size());
    kept.push_back(std::move(nodes_[i]));
  }
  renumber(remap, std::move(kept));
}

bool Graph::sort_topologically() {
  const size_t n = nodes_.size();
  std::vector<int> pending(n, 0);
  std::vector<std::vector<int32_t>> users(n);
  for (size_t i = 0; i < n; ++i) {
    for (NodeId in : nodes_[i].inputs) {
      ++pending[i];
      users[in.index].push_back(static_cast<int32_t>(i));
    }
  }
  std::priority_queue<int32_t, std::vector<int32_t>, std::greater<>> ready;
  for (size_t i = 0; i < n; ++i) {
    if (pending[i] == 0) ready.push(static_cast<int32_t>(i));
  }
  std::vector<int32_t> remap(n, -1);
  std::vector<Node> sorted;
  bool moved = false;
  while (!ready.empty()) {
    int32_t i = ready.top();
    ready.pop();
    moved |= static_cast<size_t>(i) != sorted.size();
    remap[i] = static_cast<int32_t>(sorted.size());
    sorted.push_back(std::move(nodes_[i]));
    for (int32_t u : users[i]) {
      if (--pending[u] == 0) ready.push(u);
    }
  }
  // Only a rewrite that made a cycle leaves nodes behind; keep them in order
  // so that the verifier reports it.
  for (size_t i = 0; i < n; ++i) {
    if (remap[i] >= 0) continue;
    moved = true;
    remap[i] = static_cast<int32_t>(sorted.size());
    sorted.push_back(std::move(nodes_[i]));
  }
  renumber(remap, std::move(sorted));
  return moved;
}

void Graph::renumber(const std::vector<int32_t>& remap, std::vector<Node> nodes) {
  for (Node& node : nodes) {
    for (NodeId& in : node.inputs) in.index = remap[in.index];
  }
  for (Mark& m : marks_) m.node.index = remap[m.node.index];
  for (Param& p : params_) {
    if (p.options.init_node >= 0) p.options.init_node = remap[p.options.init_node];
    if (p.options.initial.node >= 0) p.options.initial.node = remap[p.options.initial.node];
  }
  nodes_ = std::move(nodes);
}

std::vector<bool> root_mask(const Graph& g) {
  std::vector<bool> root(g.size(), false);
  for (size_t i = 0; i < g.size(); ++i) {
    NodeKind k = g.nodes()[i].kind;
    root[i] = k == NodeKind::kParam || k == NodeKind::kData || k == NodeKind::kParamAssign;
  }
  for (const Mark& m : g.marks()) root[m.node.index] = true;
  for (const Param& p : g.params()) {
    for (int32_t ref : {p.options.init_node, p.options.initial.node}) {
      if (ref >= 0) root[ref] = true;
    }
  }
  return root;
}

bool in_checkpoint(const Checkpoint& c, absl::string_view module_path) {
  return module_path == c.module_path ||
         (module_path.size() > c.module_path.size() &&
          absl::StartsWith(module_path, c.module_path) && module_path[c.module_path.size()] == '.');
}

void Graph::add_checkpoint(Checkpoint c) {
  for (const Checkpoint& have : checkpoints_) {
    if (have.module_path == c.module_path) return;
  }
  checkpoints_.push_back(std::move(c));
}

}  // namespace retc::ir
