#include "ir/dot.h"

#include <map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/format.h"

namespace retc::ir {
namespace {

constexpr const char* kParamInitColor = "#ffd98e";
constexpr const char* kStepColor = "#cfe3ff";

// A dot string literal: only '"' and '\' need escaping; newlines become \n.
std::string dot_quote(absl::string_view s) {
  std::string out = "\"";
  for (char c : valid_utf8(s)) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out + "\"";
}

struct Cluster {
  std::vector<size_t> nodes;
  std::map<std::string, Cluster> children;  // ordered: byte-stable output
};

std::string node_line(const Graph& g, size_t i, const std::string& indent) {
  const Node& n = g.nodes()[i];
  std::vector<std::string> dims;
  for (const Dim& d : n.type.dims) dims.push_back(d.is_batch() ? "B" : d.name());
  std::string title = n.kind == NodeKind::kParam ? "param " + g.param(n.param).path
                      : n.name.empty()           ? std::string(node_kind_name(n.kind))
                                       : n.name + "\n" + std::string(node_kind_name(n.kind));
  std::string label = absl::StrCat("%", i, " ", title, "\n[", absl::StrJoin(dims, ", "), "] ",
                                   dtype_name(n.type.dtype), "\n", stage_name(n.stage));
  return absl::StrCat(indent, "n", i, " [label=", dot_quote(label),
                      n.kind == NodeKind::kParam ? ", shape=ellipse" : "", ", fillcolor=\"",
                      n.stage == Stage::kParamInit ? kParamInitColor : kStepColor, "\"];\n");
}

void emit_cluster(const Graph& g, const Cluster& c, const std::string& path, int depth,
                  int& counter, std::string& out) {
  std::string indent(2 * depth + 2, ' ');
  for (size_t i : c.nodes) out += node_line(g, i, indent);
  for (const auto& [name, child] : c.children) {
    std::string sub = path.empty() ? name : path + "." + name;
    absl::StrAppend(&out, indent, "subgraph cluster_", counter++, " {\n", indent,
                    "  label=", dot_quote(sub),
                    "; style=\"rounded\"; color=\"#888888\"; fontname=\"Helvetica\";\n");
    emit_cluster(g, child, sub, depth + 1, counter, out);
    absl::StrAppend(&out, indent, "}\n");
  }
}

}  // namespace

std::string to_dot(const Graph& g) {
  Cluster root;
  for (size_t i = 0; i < g.size(); ++i) {
    Cluster* c = &root;
    const std::string& path = g.nodes()[i].module_path;
    if (!path.empty()) {
      size_t start = 0;
      while (true) {
        size_t dot = path.find('.', start);
        c = &c->children[path.substr(start,
                                     dot == std::string::npos ? std::string::npos : dot - start)];
        if (dot == std::string::npos) break;
        start = dot + 1;
      }
    }
    c->nodes.push_back(i);
  }
  std::string out =
      "digraph retc {\n"
      "  rankdir=TB;\n"
      "  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\", fontsize=10];\n"
      "  edge [color=\"#555555\"];\n";
  int counter = 0;
  emit_cluster(g, root, "", 0, counter, out);
  for (size_t i = 0; i < g.size(); ++i) {
    for (NodeId in : g.nodes()[i].inputs) absl::StrAppend(&out, "  n", in.index, " -> n", i, ";\n");
  }
  for (size_t p = 0; p < g.params().size(); ++p) {
    int32_t init = g.params()[p].options.init_node;
    if (init < 0) continue;
    for (size_t i = 0; i < g.size(); ++i) {
      const Node& n = g.nodes()[i];
      if (n.kind == NodeKind::kParam && n.param.index == static_cast<int32_t>(p)) {
        absl::StrAppend(&out, "  n", init, " -> n", i,
                        " [style=dashed, label=\"initial value\", fontsize=9];\n");
      }
    }
  }
  for (const Mark& m : g.marks()) {
    const absl::string_view kind = mark_kind_name(m.kind);
    absl::StrAppend(&out, "  m_", kind, "_", m.node.index, " [shape=plaintext, style=\"\", label=",
                    dot_quote(absl::StrCat(kind, " ", m.name)), "];\n  n", m.node.index, " -> m_",
                    kind, "_", m.node.index, ";\n");
  }
  absl::StrAppend(
      &out,
      "  subgraph cluster_legend {\n    label=\"stages\"; style=\"rounded\"; color=\"#888888\";\n",
      "    legend_init [label=\"param-init: runs once\", fillcolor=\"", kParamInitColor, "\"];\n",
      "    legend_step [label=\"step: runs every step\", fillcolor=\"", kStepColor,
      "\"];\n  }\n}\n");
  return out;
}

}  // namespace retc::ir
