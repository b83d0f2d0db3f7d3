#include "emit/torch/dims.h"

#include "absl/strings/str_cat.h"
#include "emit/config.h"

namespace retc::emit::torch {

PyValue dim_ref(const ir::DimTable& t, const ir::Dim& d) { return PyValue::ref(t.id(d)); }

const ir::Dim& feature_dim(const ir::TensorType& type) {
  for (const ir::Dim& d : type.dims) {
    if (d.is_feature_like()) return d;
  }
  return type.dims.back();
}

const ir::Dim& class_dim(const ir::Graph& g, const ir::Node& ctc) {
  const ir::TensorType& logits = g.node(ctc.inputs[0]).type;
  const ir::Dim& axis = ctc.attrs.get<ir::attr::Axis>();
  for (const ir::Dim& d : logits.dims) {
    if (!d.is_batch() && d != axis && d.size()) return d;
  }
  return logits.dims.back();
}

const ir::Dim& targets_axis(const ir::TensorType& type) {
  for (const ir::Dim& d : type.dims) {
    if (d.is_dynamic() && !d.is_batch()) return d;
  }
  return type.dims.back();
}

std::string occurrence_id(const ir::DimTable& t, const ir::Dim& d, int k) {
  return k == 1 ? t.id(d) : absl::StrCat(t.id(d), "__", k);
}

std::string weight_dim_id(const ir::DimTable& t, const std::vector<ir::Dim>& dims, size_t i) {
  int k = 1;
  for (size_t j = 0; j < i; ++j) k += dims[j] == dims[i];
  return occurrence_id(t, dims[i], k);
}

bool has_repeated_dim(const std::vector<ir::Dim>& dims) {
  for (size_t i = 0; i < dims.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (dims[i] == dims[j]) return true;
    }
  }
  return false;
}

PyValue dims_value(const ir::DimTable& t, const std::vector<ir::Dim>& dims) {
  std::vector<PyValue> v;
  for (size_t i = 0; i < dims.size(); ++i) {
    int k = 1;
    for (size_t j = 0; j < i; ++j) k += dims[j] == dims[i];
    v.push_back(PyValue::ref(occurrence_id(t, dims[i], k)));
  }
  return PyValue::list(std::move(v));
}

PyValue dim_definition(const ir::DimTable& t, const ir::Dim& d) {
  switch (d.kind()) {
    case ir::Dim::Kind::kBatch:
      return PyValue::ref("batch_dim");
    case ir::Dim::Kind::kFeature:
    case ir::Dim::Kind::kSpatial:
      return PyValue::call("Dim", {d.size() ? PyValue(*d.size()) : PyValue::none()},
                           {{"name", d.name()}});
    case ir::Dim::Kind::kDerived:
      return derived_dim_value(t, d);
  }
  return PyValue();
}

}  // namespace retc::emit::torch
