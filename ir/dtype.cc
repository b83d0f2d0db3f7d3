#include "ir/dtype.h"

namespace retc::ir {

absl::string_view dtype_name(DType t) {
  switch (t) {
    case DType::kFloat32:
      return "float32";
    case DType::kFloat16:
      return "float16";
    case DType::kFloat64:
      return "float64";
    case DType::kInt32:
      return "int32";
    case DType::kInt64:
      return "int64";
    case DType::kBool:
      return "bool";
  }
  return "?";
}

std::optional<DType> parse_dtype(absl::string_view s) {
  for (DType t : {DType::kFloat32, DType::kFloat16, DType::kFloat64, DType::kInt32, DType::kInt64,
                  DType::kBool}) {
    if (dtype_name(t) == s) return t;
  }
  return std::nullopt;
}

}  // namespace retc::ir

namespace retc::ir {

bool is_floating(DType t) {
  return t == DType::kFloat32 || t == DType::kFloat16 || t == DType::kFloat64;
}

}  // namespace retc::ir
