// TensorType, stages (attributes: attrs.h): the value-level vocabulary of the IR.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "absl/strings/string_view.h"
#include "ir/attrs.h"
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

}  // namespace retc::ir
