// Dim: a named axis, identified by identity like RETURNN's Dim tags.
//
// Two dims with the same size are different unless they are the same Dim.
// Derived dims (`a + b`, `k * a`, `a.floordiv(k)`) are expressions over other
// dims and compare structurally, so `4 * hid == 4 * hid`.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/source_loc.h"

namespace retc::ir {

class Dim {
 public:
  /// What the axis means to RETURNN: the batch, a spatial axis (time, or a
  /// static spatial axis), or a feature axis. Derived dims have kind kDerived.
  enum class Kind { kBatch, kSpatial, kFeature, kDerived };
  /// Operation of a derived dim.
  enum class Op { kNone, kAdd, kMul, kFloorDiv };

  /// The one batch dim.
  static Dim batch();
  /// A static feature dim. Example: `Dim::feature("hidden", 512)`.
  /// Names are UTF-8; invalid byte sequences become U+FFFD.
  /// Model code's dims remember where they were made (made_at): a size that
  /// makes no model (0) is reported there, not where the dim is first used.
#if __cpp_lib_source_location
  static Dim feature(std::string name, int64_t size,
                     std::source_location loc = std::source_location::current()) {
    return feature_at(std::move(name), size, SourceLoc::from(loc));
  }
#else
  static Dim feature(std::string name, int64_t size) {
    return feature_at(std::move(name), size, {});
  }
#endif
  static Dim feature_at(std::string name, int64_t size, SourceLoc made_at);
  /// A spatial dim, dynamic (per-sequence length) unless a size is given.
  /// Example: `Dim::spatial("time")`.
#if __cpp_lib_source_location
  static Dim spatial(std::string name, std::optional<int64_t> size = std::nullopt,
                     std::source_location loc = std::source_location::current()) {
    return spatial_at(std::move(name), size, SourceLoc::from(loc));
  }
#else
  static Dim spatial(std::string name, std::optional<int64_t> size = std::nullopt) {
    return spatial_at(std::move(name), size, {});
  }
#endif
  static Dim spatial_at(std::string name, std::optional<int64_t> size, SourceLoc made_at);
  /// Where feature() or spatial() made this dim (unknown for others).
  const SourceLoc& made_at() const;

  Kind kind() const;
  Op op() const;
  const std::string& name() const;
  /// The static size, or nullopt for dynamic dims (and derived dims of them).
  std::optional<int64_t> size() const;
  bool is_dynamic() const { return !size().has_value(); }
  bool is_batch() const { return kind() == Kind::kBatch; }
  /// Operands of a derived dim: for kMul/kFloorDiv `operands()[0]` and
  /// `factor()`; for kAdd two operands.
  const std::vector<Dim>& operands() const;
  int64_t factor() const;
  /// Feature-ness of a derived dim follows its operands.
  bool is_feature_like() const;

  /// Human readable: `'hidden'(512)`, `'time'(dyn)`, `4*'hidden'(2048)`.
  std::string describe() const;

  friend Dim operator*(int64_t k, const Dim& d);
  friend Dim operator*(const Dim& d, int64_t k) { return k * d; }
  friend Dim operator+(const Dim& a, const Dim& b);
  Dim floordiv(int64_t k) const;

  bool operator==(const Dim& o) const;
  bool operator!=(const Dim& o) const { return !(*this == o); }

  /// Identity pointer: stable for the dim's lifetime; used as a map key.
  const void* identity() const { return impl_.get(); }

 private:
  struct Impl;
  explicit Dim(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;
};

/// Position of `d` in `dims`, or -1.
int index_of(const std::vector<Dim>& dims, const Dim& d);
/// `[B, 'time'(dyn), 'in'(9)]`.
std::string describe(const std::vector<Dim>& dims);

}  // namespace retc::ir
