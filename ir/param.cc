#include "ir/param.h"

#include "absl/strings/str_cat.h"
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

absl::string_view distribution_name(Distribution d) {
  switch (d) {
    case Distribution::kUniform:
      return "uniform";
    case Distribution::kNormal:
      return "normal";
    case Distribution::kTruncatedNormal:
      return "truncated_normal";
  }
  return "?";
}

namespace {

absl::string_view fan_mode_name(FanMode m) {
  switch (m) {
    case FanMode::kFanIn:
      return "fan_in";
    case FanMode::kFanOut:
      return "fan_out";
    case FanMode::kFanAvg:
      return "fan_avg";
  }
  return "?";
}

}  // namespace

Initializer Initializer::constant(double v) {
  Initializer i;
  i.kind = Kind::kConstant;
  i.value = v;
  return i;
}

Initializer Initializer::variance_scaling(double scale, FanMode mode, Distribution d) {
  Initializer i;
  i.kind = Kind::kVarianceScaling;
  i.scale = scale;
  i.mode = mode;
  i.distribution = d;
  return i;
}

Initializer Initializer::glorot_uniform() {
  return variance_scaling(1.0, FanMode::kFanAvg, Distribution::kUniform);
}
Initializer Initializer::glorot_normal() {
  return variance_scaling(1.0, FanMode::kFanAvg, Distribution::kTruncatedNormal);
}
Initializer Initializer::he_normal() {
  return variance_scaling(2.0, FanMode::kFanIn, Distribution::kTruncatedNormal);
}
Initializer Initializer::he_uniform() {
  return variance_scaling(2.0, FanMode::kFanIn, Distribution::kUniform);
}

Initializer Initializer::normal(double mean, double stddev) {
  Initializer i;
  i.kind = Kind::kNormal;
  i.mean = mean;
  i.stddev = stddev;
  return i;
}

Initializer Initializer::uniform(double minval, double maxval) {
  Initializer i;
  i.kind = Kind::kUniform;
  i.minval = minval;
  i.maxval = maxval;
  return i;
}

std::string Initializer::describe() const {
  switch (kind) {
    case Kind::kConstant:
      return "constant(" + format_double(value) + ")";
    case Kind::kVarianceScaling:
      return absl::StrCat("variance_scaling(scale=", format_double(scale),
                          ", mode=", fan_mode_name(mode),
                          ", distribution=", distribution_name(distribution), ")");
    case Kind::kNormal:
      return absl::StrCat("normal(mean=", format_double(mean), ", stddev=", format_double(stddev),
                          ")");
    case Kind::kUniform:
      return absl::StrCat("uniform(minval=", format_double(minval),
                          ", maxval=", format_double(maxval), ")");
    case Kind::kSubgraph:
      return absl::StrCat("subgraph(%", node, ")");
  }
  return "?";
}

Initializer default_initializer(ParamKind kind) {
  switch (kind) {
    case ParamKind::kWeight:
    case ParamKind::kEmbedding:
      return Initializer::glorot_uniform();
    case ParamKind::kNormScale:
      return Initializer::constant(1.0);
    case ParamKind::kBias:
    case ParamKind::kNormShift:
    case ParamKind::kAuxiliary:
      return Initializer::constant(0.0);
  }
  return Initializer::constant(0.0);
}

std::pair<double, double> fans(const std::vector<Dim>& dims) {
  auto size = [](const Dim& d) { return static_cast<double>(d.size().value_or(1)); };
  if (dims.empty()) return {1.0, 1.0};
  if (dims.size() == 1) return {size(dims[0]), size(dims[0])};
  double receptive = 1.0;
  for (size_t i = 0; i + 2 < dims.size(); ++i) receptive *= size(dims[i]);
  return {size(dims[dims.size() - 2]) * receptive, size(dims.back()) * receptive};
}

}  // namespace retc::ir
