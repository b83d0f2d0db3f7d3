#include "absl/strings/string_view.h"
#include "ir/param.h"

#include "ir/format.h"

namespace retc::ir {

absl::string_view param_kind_name(ParamKind k) {
  switch (k) {
    case ParamKind::kWeight:
      return "weight";
    case ParamKind::kBias:
      return "bias";
    case ParamKind::kEmbedding:
      return "embedding";
    case ParamKind::kNormScale:
      return "norm-scale";
    case ParamKind::kNormShift:
      return "norm-shift";
    case ParamKind::kAuxiliary:
      return "auxiliary";
  }
  return "?";
}

std::string Initializer::describe() const {
  switch (kind) {
    case Kind::kConstant:
      return "constant(" + format_double(value) + ")";
    case Kind::kGlorotUniform:
      return "glorot_uniform";
    case Kind::kGlorotNormal:
      return "glorot_normal";
  }
  return "?";
}

std::string Param::variable_name() const {
  std::string s = path;
  for (char& c : s) {
    if (c == '.') c = '/';
  }
  return s + "/param";
}

}  // namespace retc::ir
