#include "ir/dim.h"

#include <cassert>

#include "ir/format.h"

namespace retc::ir {

struct Dim::Impl {
  Kind kind;
  Op op = Op::kNone;
  std::string name;
  std::optional<int64_t> size;
  std::vector<Dim> operands;
  int64_t factor = 0;
  SourceLoc made_at;
};

Dim Dim::batch() {
  // Immutable, created once: the one batch dim every graph shares.
  static const Dim kBatch(
      std::make_shared<const Impl>(Impl{Kind::kBatch, Op::kNone, "B", {}, {}, 0}));
  return kBatch;
}

Dim Dim::feature_at(std::string name, int64_t size, SourceLoc made_at) {
  return Dim(std::make_shared<const Impl>(
      Impl{Kind::kFeature, Op::kNone, valid_utf8(name), size, {}, 0, std::move(made_at)}));
}

Dim Dim::spatial_at(std::string name, std::optional<int64_t> size, SourceLoc made_at) {
  return Dim(std::make_shared<const Impl>(
      Impl{Kind::kSpatial, Op::kNone, valid_utf8(name), size, {}, 0, std::move(made_at)}));
}

const SourceLoc& Dim::made_at() const { return impl_->made_at; }

Dim::Kind Dim::kind() const { return impl_->kind; }
Dim::Op Dim::op() const { return impl_->op; }
const std::string& Dim::name() const { return impl_->name; }
std::optional<int64_t> Dim::size() const { return impl_->size; }
const std::vector<Dim>& Dim::operands() const { return impl_->operands; }
int64_t Dim::factor() const { return impl_->factor; }

bool Dim::is_feature_like() const {
  if (kind() == Kind::kFeature) return true;
  if (kind() != Kind::kDerived) return false;
  for (const Dim& d : operands()) {
    if (!d.is_feature_like()) return false;
  }
  return true;
}

Dim operator*(int64_t k, const Dim& d) {
  std::optional<int64_t> size;
  if (d.size()) size = k * *d.size();
  std::string name = std::to_string(k) + "*" + d.name();
  return Dim(std::make_shared<const Dim::Impl>(
      Dim::Impl{Dim::Kind::kDerived, Dim::Op::kMul, std::move(name), size, {d}, k}));
}

Dim operator+(const Dim& a, const Dim& b) {
  std::optional<int64_t> size;
  if (a.size() && b.size()) size = *a.size() + *b.size();
  std::string name = a.name() + "+" + b.name();
  return Dim(std::make_shared<const Dim::Impl>(
      Dim::Impl{Dim::Kind::kDerived, Dim::Op::kAdd, std::move(name), size, {a, b}, 0}));
}

Dim Dim::floordiv(int64_t k) const {
  assert(k > 0);
  std::optional<int64_t> s;
  if (size()) s = *size() / k;
  std::string n = name() + "//" + std::to_string(k);
  return Dim(std::make_shared<const Impl>(
      Impl{Kind::kDerived, Op::kFloorDiv, std::move(n), s, {*this}, k}));
}

bool Dim::operator==(const Dim& o) const {
  if (impl_ == o.impl_) return true;
  if (kind() != Kind::kDerived || o.kind() != Kind::kDerived) return false;
  return op() == o.op() && factor() == o.factor() && operands() == o.operands();
}

std::string Dim::describe() const {
  if (is_batch()) return "B";
  std::string s = "'" + printable(name()) + "'(";
  s += size() ? std::to_string(*size()) : std::string("dyn");
  return s + ")";
}

int index_of(const std::vector<Dim>& dims, const Dim& d) {
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == d) return static_cast<int>(i);
  }
  return -1;
}

std::string describe(const std::vector<Dim>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) s += ", ";
    s += dims[i].describe();
  }
  return s + "]";
}

}  // namespace retc::ir
