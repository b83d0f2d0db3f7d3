#include "compiler/nn/layers.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include "absl/strings/str_cat.h"
#include "compiler/nn/builder.h"
#include "compiler/nn/error.h"

namespace retc::nn {

void check_input_dim(const Module& m, const Tensor& x, const ir::Dim& dim,
                     absl::string_view dim_role, const ir::SourceLoc& loc) {
  if (ir::index_of(x.dims(), dim) >= 0) return;
  std::vector<ir::Dim> features;
  for (const ir::Dim& d : x.dims()) {
    if (d.is_feature_like()) features.push_back(d);
  }
  if (features.size() == 1) {
    fail(loc, absl::StrCat(m.describe(), ": input dim ", features[0].describe(), " does not match ",
                           dim_role, " ", dim.describe()));
  }
  fail(loc, absl::StrCat(m.describe(), ": input ", ir::describe(x.dims()), " has no ", dim_role,
                         " ", dim.describe()));
}

Linear::Linear(ir::Dim in_dim, ir::Dim out_dim, bool with_bias)
    : Module("linear"), in_dim_(in_dim), out_dim_(out_dim), with_bias_(with_bias) {
  weight_ = register_parameter("weight", {in_dim, out_dim}, ir::ParamKind::kWeight);
  if (with_bias) {
    bias_ = register_parameter("bias", {out_dim}, ir::ParamKind::kBias);
  }
}

Tensor Linear::forward(const Tensor& input, std::source_location loc) const {
  return call(input, loc, [&](const Tensor& x) {
    ir::SourceLoc l = ir::SourceLoc::from(loc);
    check_input_dim(*this, x, in_dim_, "in_dim", l);
    Builder& b = x.builder();
    Tensor y = dot(x, b.param(weight_), {in_dim_}, loc);
    if (with_bias_) y = add(y, b.param(bias_), loc);
    return y;
  });
}

Lstm::Lstm(ir::Dim in_dim, ir::Dim out_dim, Direction direction)
    : Module("lstm"), in_dim_(in_dim), out_dim_(out_dim), direction_(direction) {
  const ir::Dim gates = 4 * out_dim;
  ff_weight_ = register_parameter("ff_weight", {in_dim, gates}, ir::ParamKind::kWeight);
  rec_weight_ = register_parameter("rec_weight", {out_dim, gates}, ir::ParamKind::kWeight);
  bias_ = register_parameter("bias", {gates}, ir::ParamKind::kBias);
}

Tensor Lstm::forward(const Tensor& input, const ir::Dim& axis, std::source_location loc) const {
  return call(input, loc, [&](const Tensor& x) { return run(x, axis, loc); });
}

LstmState Lstm::step(const Tensor& input, const LstmState& state, std::source_location loc) const {
  LstmState out;
  out.h = call(input, loc, [&](const Tensor& x) {
    const ir::SourceLoc l = ir::SourceLoc::from(loc);
    check_input_dim(*this, x, in_dim_, "in_dim", l);
    if (direction_ == Direction::kBackward)
      fail(l, absl::StrCat(describe(), ".step: a backward LSTM runs over a whole sequence only"));
    if (!state.h.defined() || !state.c.defined() || ir::index_of(state.h.dims(), out_dim_) < 0 ||
        ir::index_of(state.c.dims(), out_dim_) < 0) {
      fail(l, absl::StrCat(describe(), ".step: the state's h and c need the out dim ",
                           out_dim_.describe()));
    }
    Builder& b = x.builder();
    const ir::Dim gates = ff_weight_.dims()[1];
    const ir::Dim four = ir::Dim::feature("lstm_gates", 4), one = ir::Dim::feature("lstm_gate", 1);
    Tensor z = add(add(dot(x, b.param(ff_weight_), {in_dim_}, loc),
                       dot(state.h, b.param(rec_weight_), {out_dim_}, loc), loc),
                   b.param(bias_), loc);
    z = split_dims(z, gates, {four, out_dim_}, loc);
    auto gate = [&](int64_t k) { return reduce(slice(z, four, k, one, loc), "sum", {one}, loc); };
    Tensor c = add(mul(sigmoid(gate(2), loc), state.c, loc),
                   mul(sigmoid(gate(1), loc), tanh(gate(0), loc), loc), loc);
    out.c = c;
    return mul(sigmoid(gate(3), loc), tanh(c, loc), loc);
  });
  return out;
}

std::pair<Tensor, LstmState> Lstm::forward_with_state(const Tensor& input, const ir::Dim& axis,
                                                      const LstmState& initial,
                                                      std::source_location loc) const {
  Tensor y = call(input, loc, [&](const Tensor& x) { return run(x, axis, loc, initial); });
  return {y, {lstm_final_state(y, "h", loc), lstm_final_state(y, "c", loc)}};
}

Tensor Lstm::run(const Tensor& x, const ir::Dim& axis, std::source_location loc,
                 const LstmState& initial) const {
  const ir::SourceLoc l = ir::SourceLoc::from(loc);
  check_input_dim(*this, x, in_dim_, "in_dim", l);
  if (ir::index_of(x.dims(), axis) < 0) {
    fail(l, absl::StrCat(describe(), ": input ", ir::describe(x.dims()), " has no loop axis ",
                         axis.describe()));
  }
  if (axis.is_batch() || axis.is_feature_like()) {
    fail(l, absl::StrCat(describe(), ": loop axis ", axis.describe(), " must be a spatial dim"));
  }
  Builder& b = x.builder();
  if (initial.h.defined() != initial.c.defined())
    fail(l, absl::StrCat(describe(), ": the initial state needs both h and c"));
  return lstm(x, b.param(ff_weight_), b.param(rec_weight_), b.param(bias_), axis, out_dim_,
              direction_ == Direction::kBackward, loc, initial.h.defined() ? &initial.h : nullptr,
              initial.c.defined() ? &initial.c : nullptr);
}

BLstm::BLstm(ir::Dim in_dim, ir::Dim fw_dim, ir::Dim bw_dim)
    : Module("blstm"), out_dim_(fw_dim + bw_dim) {
  fw = register_module("fw", std::make_shared<Lstm>(in_dim, fw_dim));
  bw = register_module("bw", std::make_shared<Lstm>(in_dim, bw_dim, Lstm::Direction::kBackward));
}

Tensor BLstm::forward(const Tensor& input, const ir::Dim& axis, std::source_location loc) const {
  return call(input, loc, [&](const Tensor& x) {
    return concat(fw->forward(x, axis, loc), fw->out_dim(), bw->forward(x, axis, loc),
                  bw->out_dim(), loc);
  });
}

LayerNorm::LayerNorm(ir::Dim dim, double epsilon)
    : Module("layer_norm"), dim_(dim), epsilon_(epsilon) {
  scale_ = register_parameter("scale", {dim}, ir::ParamKind::kNormScale);
  bias_ = register_parameter("bias", {dim}, ir::ParamKind::kNormShift);
}

Tensor LayerNorm::forward(const Tensor& input, std::source_location loc) const {
  return call(input, loc, [&](const Tensor& x) {
    check_input_dim(*this, x, dim_, "dim", ir::SourceLoc::from(loc));
    Builder& b = x.builder();
    return add(mul(normalize(x, {dim_}, epsilon_, loc), b.param(scale_), loc), b.param(bias_), loc);
  });
}

RmsNorm::RmsNorm(ir::Dim dim, double epsilon) : Module("rms_norm"), dim_(dim), epsilon_(epsilon) {
  scale_ = register_parameter("scale", {dim}, ir::ParamKind::kNormScale);
}

Tensor RmsNorm::forward(const Tensor& input, std::source_location loc) const {
  return call(input, loc, [&](const Tensor& x) {
    check_input_dim(*this, x, dim_, "dim", ir::SourceLoc::from(loc));
    Builder& b = x.builder();
    Tensor mean_square = reduce(mul(x, x, loc), "mean", {dim_}, loc);
    Tensor inv_rms =
        activation(add(mean_square, constant(b, epsilon_, {}, loc), loc), "rsqrt", loc);
    return mul(mul(x, inv_rms, loc), b.param(scale_), loc);
  });
}

GroupNorm::GroupNorm(ir::Dim dim, int64_t num_groups, double epsilon)
    : Module("group_norm"),
      dim_(dim),
      groups_(ir::Dim::feature("groups", num_groups)),
      per_group_(
          ir::Dim::feature("per_group", dim.size().value_or(0) / std::max<int64_t>(num_groups, 1))),
      epsilon_(epsilon) {
  if (num_groups < 1 || !dim.size() || *dim.size() % num_groups != 0) {
    reject(
        absl::StrCat(describe(), ": ", num_groups, " groups must divide the dim ", dim.describe()));
  }
  if (!(epsilon > 0)) reject(absl::StrCat(describe(), ": epsilon must be positive, got ", epsilon));
  scale_ = register_parameter("scale", {dim}, ir::ParamKind::kNormScale);
  bias_ = register_parameter("bias", {dim}, ir::ParamKind::kNormShift);
}

Tensor GroupNorm::forward(const Tensor& input, const std::vector<ir::Dim>& spatial_axes,
                          std::source_location loc) const {
  return call(input, loc, [&](const Tensor& x) {
    ir::SourceLoc l = ir::SourceLoc::from(loc);
    check_input_dim(*this, x, dim_, "dim", l);
    std::vector<ir::Dim> axes = {per_group_};
    for (const ir::Dim& a : spatial_axes) {
      if (ir::index_of(x.dims(), a) < 0 || a.is_batch() || a == dim_)
        fail(l,
             absl::StrCat(describe(), ": the spatial axis ", a.describe(), " must be an axis of ",
                          ir::describe(x.dims()), " (not the batch or the channels)"));
      axes.push_back(a);
    }
    Builder& b = x.builder();
    // Mean and variance over the group's channels and the spatial axes
    // (reduce leaves out the padding of dynamic ones).
    Tensor h = split_dims(x, dim_, {groups_, per_group_}, loc);
    Tensor centered = sub(h, reduce(h, "mean", axes, loc), loc);
    Tensor variance = reduce(mul(centered, centered, loc), "mean", axes, loc);
    Tensor normed =
        mul(centered, activation(add(variance, constant(b, epsilon_, {}, loc), loc), "rsqrt", loc),
            loc);
    return add(mul(merge_dims(normed, {groups_, per_group_}, dim_, loc), b.param(scale_), loc),
               b.param(bias_), loc);
  });
}

Embedding::Embedding(ir::Dim vocab, ir::Dim dim) : Module("embedding"), vocab_(vocab), dim_(dim) {
  weight_ = register_parameter("weight", {vocab, dim}, ir::ParamKind::kEmbedding);
}

Tensor Embedding::forward(const Tensor& ids, std::source_location loc) const {
  return call(ids, loc, [&](const Tensor& x) {
    ir::SourceLoc l = ir::SourceLoc::from(loc);
    if (!x.type().sparse_dim || *x.type().sparse_dim != vocab_) {
      fail(l, absl::StrCat(describe(), ": ids ", x.type().describe(),
                           " must be sparse over the vocab ", vocab_.describe()));
    }
    return gather(x.builder().param(weight_), x, vocab_, loc);
  });
}

Tensor Embedding::unembed(const Tensor& input, std::source_location loc) const {
  return call(input, loc, [&](const Tensor& h) {
    check_input_dim(*this, h, dim_, "dim", ir::SourceLoc::from(loc));
    return dot(h, h.builder().param(weight_), {dim_}, loc);
  });
}

namespace {

// A (transposed) convolution's kernel dims: "kernel", or "kernel0", "kernel1", ...
std::vector<ir::Dim> kernel_dims(const std::vector<int64_t>& kernel) {
  std::vector<ir::Dim> dims;
  for (size_t i = 0; i < kernel.size(); ++i) {
    dims.push_back(
        ir::Dim::spatial(kernel.size() == 1 ? "kernel" : absl::StrCat("kernel", i), kernel[i]));
  }
  return dims;
}

// The out axis for `in_axis`, made by `make` once per input axis (`cache`: in -> out).
ir::Dim cached_out_axis(std::vector<std::pair<ir::Dim, ir::Dim>>& cache, const ir::Dim& in_axis,
                        const std::function<ir::Dim()>& make) {
  for (const auto& [in, out] : cache) {
    if (in == in_axis) return out;
  }
  ir::Dim out = make();
  cache.emplace_back(in_axis, out);
  return out;
}

// The out axes of a module with `kernels` kernel dims over `axes`.
std::vector<ir::Dim> windowed_out_axes(
    const Module& m, const std::vector<ir::Dim>& axes, size_t kernels,
    const std::function<ir::Dim(const ir::Dim&, size_t)>& out_axis, const ir::SourceLoc& l) {
  if (axes.size() != kernels) {
    fail(l, absl::StrCat(m.describe(), ": needs ", kernels, " spatial axes, got ", axes.size()));
  }
  std::vector<ir::Dim> out_axes;
  for (size_t i = 0; i < axes.size(); ++i) out_axes.push_back(out_axis(axes[i], i));
  return out_axes;
}

}  // namespace

// A convolution's or pooling's window: kernel sizes, strides and the
// dilation at least 1 (RETURNN fails on 0 far from the user's line, or
// divides by it).
void check_window(Module& m, const std::vector<int64_t>& kernel,
                  const std::vector<int64_t>& strides, int64_t dilation) {
  for (int64_t k : kernel) {
    if (k < 1) m.reject(absl::StrCat(m.describe(), ": kernel sizes must be at least 1, got ", k));
  }
  for (int64_t st : strides) {
    if (st < 1) m.reject(absl::StrCat(m.describe(), ": strides must be at least 1, got ", st));
  }
  if (dilation < 1)
    m.reject(absl::StrCat(m.describe(), ": the dilation must be at least 1, got ", dilation));
}

Conv::Conv(std::string type_name, ir::Dim in_dim, ir::Dim out_dim, std::vector<int64_t> kernel,
           std::vector<int64_t> strides, int64_t dilation, std::string padding, int64_t groups)
    : Module(std::move(type_name)),
      in_dim_(in_dim),
      out_dim_(out_dim),
      kernel_(std::move(kernel)),
      strides_(std::move(strides)),
      dilation_(dilation),
      padding_(std::move(padding)),
      groups_(groups) {
  check_window(*this, kernel_, strides_, dilation_);
  if (groups_ < 1) reject(absl::StrCat(describe(), ": groups must be at least 1, got ", groups_));
  if (padding_ != "same" && padding_ != "valid" && padding_ != "same_consistent") {
    reject(absl::StrCat(describe(),
                        ": padding must be \"same\", \"valid\" or \"same_consistent\", got \"",
                        padding_, "\""));
  }
  std::vector<ir::Dim> dims = kernel_dims(kernel_);
  dims.push_back(groups_ <= 1 ? in_dim : in_dim.floordiv(groups_));  // < 1: rejected above
  dims.push_back(out_dim);
  weight_ = register_parameter("weight", std::move(dims), ir::ParamKind::kWeight);
  bias_ = register_parameter("bias", {out_dim}, ir::ParamKind::kBias);
}

ir::Dim Conv::out_axis(const ir::Dim& in_axis, size_t i) const {
  return cached_out_axis(out_axes_, in_axis, [&] {
    return windowed_dim(in_axis, kernel_.at(i), strides_.at(i), dilation_,
                        padding_ == "same_consistent" ? "same" : padding_);
  });
}

Tensor Conv::forward(const Tensor& input, const std::vector<ir::Dim>& axes,
                     std::source_location loc) const {
  return call(input, loc, [&](const Tensor& x) {
    ir::SourceLoc l = ir::SourceLoc::from(loc);
    check_input_dim(*this, x, in_dim_, "in_dim", l);
    std::vector<ir::Dim> out_axes = windowed_out_axes(
        *this, axes, kernel_.size(), [&](const ir::Dim& a, size_t i) { return out_axis(a, i); }, l);
    Builder& b = x.builder();
    const bool strided =
        std::any_of(strides_.begin(), strides_.end(), [](int64_t s) { return s > 1; });
    if (padding_ != "same_consistent" || !strided) {
      return conv(x, b.param(weight_), b.param(bias_),
                  {axes, std::move(out_axes), strides_, dilation_,
                   padding_ == "same_consistent" ? "same" : padding_, groups_},
                  loc);
    }
    // rf's consistent "same" padding: (k - 1) * dilation frames around each
    // sequence (the left half first), then a valid convolution: a sequence's
    // frames do not depend on the other sequences of its batch.
    Tensor padded = x;
    std::vector<ir::Dim> padded_axes;
    for (size_t i = 0; i < axes.size(); ++i) {
      const int64_t total = (kernel_.at(i) - 1) * dilation_;
      const std::string name = absl::StrCat(axes[i].name(), "_padded");
      const ir::Dim out = axes[i].is_dynamic()
                              ? ir::Dim::spatial_at(name, std::nullopt, l)
                              : ir::Dim::spatial_at(name, axes[i].size().value_or(0) + total, l);
      padded = pad(padded, axes[i], total / 2, total - total / 2, 0.0, out, loc);
      padded_axes.push_back(out);
    }
    return conv(padded, b.param(weight_), b.param(bias_),
                {padded_axes, std::move(out_axes), strides_, dilation_, "valid", groups_}, loc);
  });
}

TransposedConv::TransposedConv(std::string type_name, ir::Dim in_dim, ir::Dim out_dim,
                               std::vector<int64_t> kernel, std::vector<int64_t> strides,
                               std::string padding, bool with_bias)
    : Module(std::move(type_name)),
      in_dim_(in_dim),
      out_dim_(out_dim),
      kernel_(std::move(kernel)),
      strides_(std::move(strides)),
      padding_(std::move(padding)) {
  check_window(*this, kernel_, strides_, 1);
  std::vector<ir::Dim> dims = kernel_dims(kernel_);
  dims.push_back(out_dim);
  dims.push_back(in_dim);
  weight_ = register_parameter("weight", std::move(dims), ir::ParamKind::kWeight);
  if (with_bias) bias_ = register_parameter("bias", {out_dim}, ir::ParamKind::kBias);
}

ir::Dim TransposedConv::out_axis(const ir::Dim& in_axis, size_t i) const {
  return cached_out_axis(out_axes_, in_axis, [&] {
    return transposed_dim(in_axis, kernel_.at(i), strides_.at(i), padding_);
  });
}

Tensor TransposedConv::forward(const Tensor& input, const std::vector<ir::Dim>& axes,
                               std::source_location loc) const {
  return call(input, loc, [&](const Tensor& x) {
    ir::SourceLoc l = ir::SourceLoc::from(loc);
    check_input_dim(*this, x, in_dim_, "in_dim", l);
    std::vector<ir::Dim> out_axes = windowed_out_axes(
        *this, axes, kernel_.size(), [&](const ir::Dim& a, size_t i) { return out_axis(a, i); }, l);
    Builder& b = x.builder();
    std::optional<Tensor> bias;
    if (bias_.defined()) bias = b.param(bias_);
    return transposed_conv(x, b.param(weight_), bias ? &*bias : nullptr,
                           {axes, std::move(out_axes), strides_, padding_}, loc);
  });
}

BatchNorm::BatchNorm(ir::Dim dim, double epsilon, double momentum)
    : BatchNorm(dim, BatchNormOptions().epsilon(epsilon).momentum(momentum)) {}

BatchNorm::BatchNorm(ir::Dim dim, const BatchNormOptions& opts)
    : Module("batch_norm"), dim_(dim), opts_(opts) {
  const double momentum = opts.momentum(), epsilon = opts.epsilon();
  if (!(momentum >= 0 && momentum <= 1))
    reject(absl::StrCat(describe(), ": momentum must be in [0, 1], got ", momentum));
  if (!(epsilon >= 0 && std::isfinite(epsilon)))
    reject(absl::StrCat(describe(), ": epsilon must be finite and at least 0, got ", epsilon));
  if (opts.affine()) {
    scale_ = register_parameter("scale", {dim}, ir::ParamKind::kNormScale);
    bias_ = register_parameter("bias", {dim}, ir::ParamKind::kNormShift);
  }
  running_mean_ = register_parameter("running_mean", {dim}, ir::ParamKind::kAuxiliary);
  running_var_ = register_parameter("running_var", {dim}, ir::ParamKind::kAuxiliary,
                                    ir::Initializer::constant(1.0));
  default_options(running_mean_).set_trainable(false);
  default_options(running_var_).set_trainable(false);
}

Tensor BatchNorm::forward(const Tensor& input, std::source_location loc) const {
  return call(input, loc, [&](const Tensor& x) {
    ir::SourceLoc l = ir::SourceLoc::from(loc);
    check_input_dim(*this, x, dim_, "dim", l);
    Builder& b = x.builder();
    // Without affine params, a scale of 1 and a bias of 0: the same op on
    // both targets (TF: RETURNN's batch_norm layer reads them as its gamma
    // and beta).
    Tensor scale = opts_.affine() ? b.param(scale_) : constant(b, 1.0, {dim_}, loc);
    Tensor bias = opts_.affine() ? b.param(bias_) : constant(b, 0.0, {dim_}, loc);
    return batch_norm(x, b.param(running_mean_), b.param(running_var_), scale, bias, dim_,
                      opts_.epsilon(), opts_.momentum(), opts_.masked(), loc);
  });
}

Parameter& BatchNorm::scale() {
  if (!opts_.affine()) reject(absl::StrCat(describe(), ": scale(): affine(false) has none"));
  return scale_;
}

Parameter& BatchNorm::bias() {
  if (!opts_.affine()) reject(absl::StrCat(describe(), ": bias(): affine(false) has none"));
  return bias_;
}

Tensor Dropout::forward(const Tensor& input, std::source_location loc) const {
  return call(input, loc, [&](const Tensor& x) { return dropout(x, rate_, {}, loc); });
}

Tensor Sequential::forward(const Tensor& input, std::source_location loc) const {
  return run(input, nullptr, loc);
}

Tensor Sequential::forward(const Tensor& input, const ir::Dim& time,
                           std::source_location loc) const {
  return run(input, &time, loc);
}

Tensor Sequential::run(const Tensor& input, const ir::Dim* time, std::source_location loc) const {
  if (!time) {
    for (const Step& s : steps_) {
      if (!s.needs_time) continue;
      fail(ir::SourceLoc::from(loc), absl::StrCat(describe(), ": module '", s.name,
                                                  "' needs the time dim; call forward(x, time)"));
    }
  }
  return call(input, loc, [&](const Tensor& x) {
    Tensor h = x;
    for (const Step& s : steps_) h = s.run(h, time, loc);
    return h;
  });
}

}  // namespace retc::nn
