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

void Attrs::set(std::string key, AttrValue v) {
  for (auto& [k, old] : items_) {
    if (k == key) {
      old = std::move(v);
      return;
    }
  }
  items_.emplace_back(std::move(key), std::move(v));
}

const AttrValue* Attrs::find(absl::string_view key) const {
  for (const auto& [k, v] : items_) {
    if (k == key) return &v;
  }
  return nullptr;
}

}  // namespace retc::ir
