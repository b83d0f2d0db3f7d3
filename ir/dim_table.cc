#include "ir/dim_table.h"

#include "absl/strings/str_cat.h"
#include "ir/format.h"

namespace retc::ir {
namespace {

std::string sanitize(const std::string& name) {
  std::string s;
  for (char c : name) {
    bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    s += ok ? c : '_';
  }
  if (s.empty() || (s[0] >= '0' && s[0] <= '9')) s = "d_" + s;
  return s;
}

}  // namespace

DimTable::DimTable(const Graph& g) {
  for (const Param& p : g.params()) {
    for (const Dim& d : p.dims) add(d);
  }
  for (const Node& n : g.nodes()) {
    for (const Dim& d : n.type.dims) add(d);
    if (n.type.sparse_dim) add(*n.type.sparse_dim);
    for (const auto& [k, v] : n.attrs.items()) {
      if (const Dim* d = std::get_if<Dim>(&v)) add(*d);
      if (const auto* ds = std::get_if<std::vector<Dim>>(&v)) {
        for (const Dim& d : *ds) add(d);
      }
    }
  }
}

void DimTable::add(const Dim& d) {
  if (d.is_batch()) return;
  if (find(d) >= 0) return;
  for (const Dim& op : d.operands()) add(op);
  std::string base = sanitize(d.name());
  if (d.kind() == Dim::Kind::kDerived) {
    // `hidden_x4`, `a_plus_b`, `time_div2`: from the operands' ids.
    auto stem = [&](const Dim& op) {
      std::string s = id(op);
      return s.ends_with("_dim") ? s.substr(0, s.size() - 4) : s;
    };
    const std::vector<Dim>& ops = d.operands();
    switch (d.op()) {
      case Dim::Op::kAdd:
        base = stem(ops[0]) + "_plus_" + stem(ops[1]);
        break;
      case Dim::Op::kMul:
        base = absl::StrCat(stem(ops[0]), "_x", d.factor());
        break;
      case Dim::Op::kFloorDiv:
        base = absl::StrCat(stem(ops[0]), "_div", d.factor());
        break;
      case Dim::Op::kNone:
        break;
    }
  }
  base += "_dim";
  std::string name = base;
  for (int k = 2; taken_.contains(name) || !is_identifier(name); ++k)
    name = absl::StrCat(base, "_", k);
  taken_.insert(name);
  by_identity_[d.identity()] = static_cast<int>(dims_.size());
  dims_.push_back(d);
  ids_.push_back(std::move(name));
}

const std::string& DimTable::id(const Dim& d) const {
  static const std::string kBatch = "batch_dim";
  if (d.is_batch()) return kBatch;
  int i = find(d);
  static const std::string kUnknown = "unknown_dim";
  return i >= 0 ? ids_[i] : kUnknown;
}

int DimTable::find(const Dim& d) const {
  if (auto it = by_identity_.find(d.identity()); it != by_identity_.end()) return it->second;
  if (d.kind() != Dim::Kind::kDerived) return -1;
  for (size_t i = 0; i < dims_.size(); ++i) {
    if (dims_[i] == d) return static_cast<int>(i);
  }
  return -1;
}

}  // namespace retc::ir
