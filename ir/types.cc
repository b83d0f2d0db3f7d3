#include "ir/types.h"

namespace retc::ir {

std::string TensorType::describe() const {
  std::string s = ir::describe(dims) + " " + std::string(dtype_name(dtype));
  if (sparse_dim) s += " sparse " + sparse_dim->describe();
  return s;
}

absl::string_view stage_name(Stage s) {
  switch (s) {
    case Stage::kParamInit:
      return "param-init";
    case Stage::kStep:
      return "step";
  }
  return "?";
}

}  // namespace retc::ir
