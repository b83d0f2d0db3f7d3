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

DimTable::DimTable(const Graph& g, const DimTable* base) : base_(base) {
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

std::string DimTable::key(const Dim& d) const {
  if (d.kind() == Dim::Kind::kDerived) {
    std::string k = absl::StrCat("derived|", static_cast<int>(d.op()), "|", d.factor());
    for (const Dim& op : d.operands()) absl::StrAppend(&k, "|", id(op));
    return k;
  }
  return absl::StrCat(static_cast<int>(d.kind()), "|", d.name(), "|", d.size().value_or(-1));
}

void DimTable::add(const Dim& d) {
  if (d.is_batch()) return;
  if (find(d) >= 0) return;
  for (const Dim& op : d.operands()) add(op);
  const std::string k = key(d);
  if (base_) {
    // The n-th dim with this key here is base's n-th.
    int n = 0;
    for (const std::string& o : keys_) n += o == k;
    for (size_t i = 0; i < base_->keys_.size(); ++i) {
      if (base_->keys_[i] != k || n-- > 0) continue;
      taken_.insert(base_->ids_[i]);
      by_identity_[d.identity()] = static_cast<int>(dims_.size());
      dims_.push_back(d);
      ids_.push_back(base_->ids_[i]);
      keys_.push_back(k);
      from_base_.push_back(true);
      return;
    }
  }
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
  auto taken = [&](const std::string& s) {
    return taken_.contains(s) || (base_ && base_->taken_.contains(s));
  };
  for (int j = 2; taken(name) || !is_identifier(name); ++j) name = absl::StrCat(base, "_", j);
  taken_.insert(name);
  by_identity_[d.identity()] = static_cast<int>(dims_.size());
  dims_.push_back(d);
  ids_.push_back(std::move(name));
  keys_.push_back(k);
  from_base_.push_back(false);
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
