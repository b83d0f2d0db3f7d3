// Param: a trainable (or auxiliary) variable of the model, with its options.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "ir/dim.h"
#include "ir/dtype.h"
#include "ir/source_loc.h"

namespace retc::ir {

/// What a param is for; options can be applied per kind.
enum class ParamKind { kWeight, kBias, kEmbedding, kNormScale, kNormShift, kAuxiliary };
absl::string_view param_kind_name(ParamKind k);

/// How random initial values are distributed.
enum class Distribution { kUniform, kNormal, kTruncatedNormal };
absl::string_view distribution_name(Distribution d);

/// Which fan variance scaling divides by (TF's convention: for dims
/// [..., in, out], fan_in = in * receptive field, fan_out = out * receptive
/// field, where the receptive field is the product of the leading dims).
enum class FanMode { kFanIn, kFanOut, kFanAvg };

/// The initial value of a param. Random schemes are lowered (pass
/// lower_init) to a seeded param-init `random` node; a user's param-init
/// subgraph is given as `node`.
struct Initializer {
  enum class Kind { kConstant, kVarianceScaling, kNormal, kUniform, kSubgraph };
  Kind kind = Kind::kConstant;
  double value = 0.0;  ///< kConstant
  double scale = 1.0;  ///< kVarianceScaling
  FanMode mode = FanMode::kFanAvg;
  Distribution distribution = Distribution::kUniform;
  double mean = 0.0, stddev = 1.0;    ///< kNormal (untruncated)
  double minval = 0.0, maxval = 1.0;  ///< kUniform
  int32_t node = -1;                  ///< kSubgraph: a node of stage param-init

  static Initializer constant(double v);
  /// Var(w) = scale / fan; uniform, normal, or truncated normal with TF's
  /// truncation-corrected stddev sqrt(scale / fan) / 0.87962566103423978.
  static Initializer variance_scaling(double scale, FanMode mode, Distribution d);
  /// Glorot / Xavier: variance_scaling(1, fan_avg, uniform).
  static Initializer glorot_uniform();
  /// TF's glorot_normal: variance_scaling(1, fan_avg, truncated normal).
  static Initializer glorot_normal();
  /// TF's he_normal: variance_scaling(2, fan_in, truncated normal).
  static Initializer he_normal();
  /// He / Kaiming uniform: variance_scaling(2, fan_in, uniform).
  static Initializer he_uniform();
  static Initializer normal(double mean, double stddev);
  static Initializer uniform(double minval, double maxval);

  /// `constant(0.0)`, `variance_scaling(scale=1.0, mode=fan_avg, distribution=uniform)`, ...
  std::string describe() const;
  bool operator==(const Initializer&) const = default;
};

/// The default initial value of a param of this kind (see README, "Parameters"):
/// weights and embeddings Glorot uniform; biases, norm shifts and auxiliary
/// params 0; norm scales 1.
Initializer default_initializer(ParamKind kind);

/// (fan_in, fan_out) of a param of these dims, TF's convention.
std::pair<double, double> fans(const std::vector<Dim>& dims);

struct WeightDecay {
  /// λ. Decoupled (default): each step, before the optimizer's update,
  /// w ← w − 2λ·w (AdamW-like; TF target: RETURNN `L2` with
  /// `decouple_constraints = True`). Coupled: λ·Σw² is added to the loss
  /// (TF: RETURNN `L2`), so the gradient gains 2λ·w and the optimizer (e.g.
  /// Adam) rescales it.
  double value = 0.0;
  bool coupled = false;
  bool operator==(const WeightDecay&) const = default;
};

struct ParamOptions {
  Initializer initial;
  bool trainable = true;
  WeightDecay weight_decay;
  double lr_multiplier = 1.0;  ///< scales the learning rate for this param
  double gradient_clip = 0.0;  ///< clip each gradient entry to [-c, c]; 0: off
  std::string device;          ///< e.g. "CPU"; empty: the backend's choice
  /// A param-init node giving the initial value (set by lower_init); -1: use `initial`.
  int32_t init_node = -1;
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

  bool operator==(const Param&) const = default;
};

}  // namespace retc::ir
