// Element types of tensors and params.
#pragma once

#include <optional>

#include "absl/strings/string_view.h"

namespace retc::ir {

enum class DType { kFloat32, kFloat16, kFloat64, kInt32, kInt64, kBool };

bool is_floating(DType t);

/// RETURNN / TF spelling: "float32", "int32", ...
absl::string_view dtype_name(DType t);
std::optional<DType> parse_dtype(absl::string_view s);

}  // namespace retc::ir
