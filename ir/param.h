// Param: a trainable (or auxiliary) variable of the model, with its options.
#pragma once

#include <string>
#include "absl/strings/string_view.h"
#include <vector>

#include "ir/dim.h"
#include "ir/dtype.h"
#include "ir/source_loc.h"

namespace retc::ir {

/// What a param is for; options can be applied per kind.
enum class ParamKind { kWeight, kBias, kEmbedding, kNormScale, kNormShift, kAuxiliary };
absl::string_view param_kind_name(ParamKind k);

/// The initial value of a param.
struct Initializer {
  enum class Kind { kConstant, kGlorotUniform, kGlorotNormal };
  Kind kind = Kind::kConstant;
  double value = 0.0;  ///< for kConstant

  static Initializer constant(double v) { return {Kind::kConstant, v}; }
  static Initializer glorot_uniform() { return {Kind::kGlorotUniform, 0.0}; }
  static Initializer glorot_normal() { return {Kind::kGlorotNormal, 0.0}; }
  /// `constant(0)`, `glorot_uniform`, ...
  std::string describe() const;
  bool operator==(const Initializer&) const = default;
};

struct ParamOptions {
  Initializer initial;
  bool trainable = true;
  bool operator==(const ParamOptions&) const = default;
};

struct Param {
  /// Module attribute path, dotted: `encoder.layers.0.ff.weight`.
  std::string path;
  std::vector<Dim> dims;
  DType dtype = DType::kFloat32;
  ParamKind kind = ParamKind::kWeight;
  ParamOptions options;
  SourceLoc loc;

  /// The TF variable name RETURNN gives it: `encoder/layers/0/ff/weight/param`.
  std::string variable_name() const;
  bool operator==(const Param&) const = default;
};

}  // namespace retc::ir
