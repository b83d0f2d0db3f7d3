#include "ir/printer.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/dim_table.h"
#include "ir/format.h"

namespace retc::ir {
namespace {

std::string dim_list(const DimTable& t, const std::vector<Dim>& dims) {
  std::vector<std::string> parts;
  for (const Dim& d : dims) parts.push_back(t.id(d));
  return "[" + absl::StrJoin(parts, ", ") + "]";
}

std::string type_str(const DimTable& t, const TensorType& ty) {
  std::string s = dim_list(t, ty.dims) + " " + std::string(dtype_name(ty.dtype));
  if (ty.sparse_dim) s += " sparse " + t.id(*ty.sparse_dim);
  return s;
}

std::string attr_str(const DimTable& t, const AttrValue& v) {
  struct Visitor {
    const DimTable& t;
    std::string operator()(bool b) const { return b ? "true" : "false"; }
    std::string operator()(int64_t i) const { return std::to_string(i); }
    std::string operator()(double d) const { return format_double(d); }
    std::string operator()(const std::string& s) const { return quote(s); }
    std::string operator()(const Dim& d) const { return t.id(d); }
    std::string operator()(const std::vector<Dim>& ds) const { return dim_list(t, ds); }
    std::string operator()(const std::vector<int64_t>& v) const {
      return "(" + absl::StrJoin(v, ", ") + ")";
    }
  };
  return std::visit(Visitor{t}, v);
}

std::string dim_def(const DimTable& t, const Dim& d) {
  std::string s = "dim " + t.id(d) + " = ";
  switch (d.kind()) {
    case Dim::Kind::kBatch:
      return s + "batch";
    case Dim::Kind::kFeature:
      return s + "feature " + quote(d.name()) + " " + std::to_string(*d.size());
    case Dim::Kind::kSpatial:
      s += "spatial " + quote(d.name());
      if (d.size()) s += " " + std::to_string(*d.size());
      return s;
    case Dim::Kind::kDerived:
      switch (d.op()) {
        case Dim::Op::kAdd:
          return s + "add " + t.id(d.operands()[0]) + " " + t.id(d.operands()[1]);
        case Dim::Op::kMul:
          return s + "mul " + t.id(d.operands()[0]) + " " + std::to_string(d.factor());
        case Dim::Op::kFloorDiv:
          return s + "floordiv " + t.id(d.operands()[0]) + " " + std::to_string(d.factor());
        case Dim::Op::kNone:
          break;
      }
  }
  return s + "?";
}

}  // namespace

std::string print(const Graph& g, const PrintOptions& opts) {
  DimTable t(g);
  const bool debug = opts.mode == PrintMode::kDebug;
  std::string out;
  for (const Dim& d : t.dims()) absl::StrAppend(&out, dim_def(t, d), "\n");
  for (size_t i = 0; i < g.params().size(); ++i) {
    const Param& p = g.params()[i];
    absl::StrAppend(&out, "param @", i, " ", quote(p.path), " : ", dim_list(t, p.dims), " ",
                    dtype_name(p.dtype), " kind=", param_kind_name(p.kind),
                    " init=", p.options.initial.describe());
    const ParamOptions& o = p.options;
    if (o.init_node >= 0) absl::StrAppend(&out, " init_node=%", o.init_node);
    if (!o.trainable) out += " trainable=false";
    if (o.weight_decay.value != 0.0) {
      absl::StrAppend(&out, " weight_decay=", format_double(o.weight_decay.value),
                      o.weight_decay.coupled ? " coupled" : "");
    }
    if (o.lr_multiplier != 1.0)
      absl::StrAppend(&out, " lr_multiplier=", format_double(o.lr_multiplier));
    if (o.gradient_clip != 0.0)
      absl::StrAppend(&out, " gradient_clip=", format_double(o.gradient_clip));
    if (!o.device.empty()) absl::StrAppend(&out, " device=", quote(o.device));
    if (debug) absl::StrAppend(&out, " loc=", quote(p.loc.str()));
    out += "\n";
  }
  for (size_t i = 0; i < g.size(); ++i) {
    const Node& n = g.nodes()[i];
    if (opts.only_stage && n.stage != *opts.only_stage) continue;
    absl::StrAppend(&out, "%", i, " = ", node_kind_name(n.kind));
    if (n.kind == NodeKind::kParam) absl::StrAppend(&out, " @", n.param.index);
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      absl::StrAppend(&out, k ? ", %" : " %", n.inputs[k].index);
    }
    if (!n.attrs.items().empty()) {
      std::vector<std::string> parts;
      for (const auto& [key, v] : n.attrs.items())
        parts.push_back(absl::StrCat(attr_key_name(key), "=", attr_str(t, v)));
      absl::StrAppend(&out, " {", absl::StrJoin(parts, ", "), "}");
    }
    absl::StrAppend(&out, " : ", type_str(t, n.type), " stage=", stage_name(n.stage));
    if (!n.module_path.empty()) absl::StrAppend(&out, " module=", quote(n.module_path));
    if (!n.name.empty()) absl::StrAppend(&out, " name=", quote(n.name));
    if (debug) absl::StrAppend(&out, " loc=", quote(n.loc.str()));
    out += "\n";
  }
  for (const Mark& m : g.marks()) {
    if (opts.only_stage && g.node(m.node).stage != *opts.only_stage) continue;
    absl::StrAppend(&out, mark_kind_name(m.kind), " ", quote(m.name), " = %", m.node.index, "\n");
  }
  for (const Checkpoint& c : g.checkpoints())
    absl::StrAppend(&out, "checkpoint ", quote(c.module_path), "\n");
  return out;
}

}  // namespace retc::ir
