// TensorType, attributes, stages: the value-level vocabulary of the IR.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "absl/strings/string_view.h"
#include "ir/dim.h"
#include "ir/dtype.h"

namespace retc::ir {

/// Ordered dims + dtype + optional sparse dim (class indices).
struct TensorType {
  std::vector<Dim> dims;
  DType dtype = DType::kFloat32;
  std::optional<Dim> sparse_dim;

  bool operator==(const TensorType&) const = default;
  /// `[B, 'time'(dyn), 'in'(9)] float32`.
  std::string describe() const;
};

/// When a node is evaluated. See "Stages" in DESIGN.md.
enum class Stage { kParamInit, kStep };
absl::string_view stage_name(Stage s);

/// Ints lists (strides, window sizes) print as `(2, 1)`; dim lists as `[...]`.
using AttrValue =
    std::variant<bool, int64_t, double, std::string, Dim, std::vector<Dim>, std::vector<int64_t>>;

/// Node attributes, in insertion order (printing and emission follow it).
class Attrs {
 public:
  Attrs() = default;
  Attrs(std::initializer_list<std::pair<std::string, AttrValue>> items) : items_(items) {}

  void set(std::string key, AttrValue v);
  const AttrValue* find(absl::string_view key) const;
  template <class T>
  const T* get(absl::string_view key) const {
    const AttrValue* v = find(key);
    return v ? std::get_if<T>(v) : nullptr;
  }
  const std::vector<std::pair<std::string, AttrValue>>& items() const { return items_; }
  bool operator==(const Attrs&) const = default;

 private:
  std::vector<std::pair<std::string, AttrValue>> items_;
};

}  // namespace retc::ir
