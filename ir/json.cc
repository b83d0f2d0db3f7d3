#include "ir/json.h"

#include "ir/dim_table.h"

namespace retc::ir {
namespace {

using Json = nlohmann::ordered_json;

Json dims_json(const DimTable& t, const std::vector<Dim>& dims) {
  Json a = Json::array();
  for (const Dim& d : dims) a.push_back(t.id(d));
  return a;
}

Json loc_json(const SourceLoc& loc) {
  if (!loc.known()) return nullptr;
  return Json{{"file", loc.file}, {"line", loc.line}, {"column", loc.column}};
}

}  // namespace

Json to_json(const Graph& g) {
  DimTable t(g);
  Json out;
  Json dims = Json::array();
  for (const Dim& d : t.dims()) {
    Json j{{"id", t.id(d)}, {"name", d.name()}};
    switch (d.kind()) {
      case Dim::Kind::kBatch:
        j["kind"] = "batch";
        break;
      case Dim::Kind::kSpatial:
        j["kind"] = "spatial";
        break;
      case Dim::Kind::kFeature:
        j["kind"] = "feature";
        break;
      case Dim::Kind::kDerived:
        j["kind"] = "derived";
        j["operands"] = dims_json(t, d.operands());
        j["factor"] = d.factor();
        break;
    }
    j["size"] = d.size() ? Json(*d.size()) : Json(nullptr);
    dims.push_back(std::move(j));
  }
  out["dims"] = std::move(dims);
  Json params = Json::array();
  for (const Param& p : g.params()) {
    params.push_back(
        Json{{"path", p.path},
             {"dims", dims_json(t, p.dims)},
             {"dtype", dtype_name(p.dtype)},
             {"kind", param_kind_name(p.kind)},
             {"init", p.options.initial.describe()},
             {"init_node", p.options.init_node >= 0 ? Json(p.options.init_node) : Json(nullptr)},
             {"trainable", p.options.trainable},
             {"weight_decay", p.options.weight_decay.value},
             {"weight_decay_coupled", p.options.weight_decay.coupled},
             {"lr_multiplier", p.options.lr_multiplier},
             {"gradient_clip", p.options.gradient_clip},
             {"device", p.options.device},
             {"loc", loc_json(p.loc)}});
  }
  out["params"] = std::move(params);
  Json nodes = Json::array();
  for (size_t i = 0; i < g.size(); ++i) {
    const Node& n = g.nodes()[i];
    Json inputs = Json::array();
    for (NodeId in : n.inputs) inputs.push_back(in.index);
    Json attrs = Json::object();
    for (const auto& item : n.attrs.items()) {
      const std::string k(
          attr_key_name(item.first));  // not a structured binding: lambdas capture it
      const AttrValue& v = item.second;
      std::visit(
          [&](const auto& x) {
            using T = std::decay_t<decltype(x)>;
            if constexpr (std::is_same_v<T, Dim>) {
              attrs[k] = t.id(x);
            } else if constexpr (std::is_same_v<T, std::vector<Dim>>) {
              attrs[k] = dims_json(t, x);
            } else {
              attrs[k] = x;
            }
          },
          v);
    }
    Json type{{"dims", dims_json(t, n.type.dims)}, {"dtype", dtype_name(n.type.dtype)}};
    if (n.type.sparse_dim) type["sparse_dim"] = t.id(*n.type.sparse_dim);
    Json j{{"id", i},
           {"kind", node_kind_name(n.kind)},
           {"inputs", std::move(inputs)},
           {"attrs", std::move(attrs)},
           {"type", std::move(type)},
           {"stage", stage_name(n.stage)},
           {"module", n.module_path},
           {"name", n.name},
           {"loc", loc_json(n.loc)}};
    if (n.kind == NodeKind::kParam) j["param"] = n.param.index;
    nodes.push_back(std::move(j));
  }
  out["nodes"] = std::move(nodes);
  Json marks = Json::array();
  for (const Mark& m : g.marks()) {
    marks.push_back(Json{
        {"kind", std::string(mark_kind_name(m.kind))}, {"name", m.name}, {"node", m.node.index}});
  }
  out["marks"] = std::move(marks);
  Json checkpoints = Json::array();
  for (const Checkpoint& c : g.checkpoints()) checkpoints.push_back(c.module_path);
  out["checkpoints"] = std::move(checkpoints);
  return out;
}

}  // namespace retc::ir
