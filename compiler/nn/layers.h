// The basic layers of the module library: Linear, LSTMs, norms,
// convolutions, batch norm, dropout, containers, embedding. (Modules own
// params; stateless ops are functions in compiler/nn/tensor.h.)
//
// Default initial values: per param kind (ir::default_initializer): weights
// Glorot uniform, biases zero, as in returnn_common. A module's params are attributed to the source
// line where the user registers the module (register_module or set_root).
#pragma once

#include <array>
#include <deque>
#include <functional>
#include <memory>
#include <source_location>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "compiler/nn/module.h"
#include "compiler/nn/options.h"

namespace retc::nn {

/// y = x·W + b, contracting `in_dim`. Params: weight [in, out], bias [out].
/// Example: `auto lin = std::make_shared<nn::Linear>(hidden, classes);`
class Linear : public Module {
 public:
  Linear(ir::Dim in_dim, ir::Dim out_dim, bool with_bias = true);
  Tensor forward(const Tensor& x, std::source_location loc = std::source_location::current()) const;

  const ir::Dim& in_dim() const { return in_dim_; }
  const ir::Dim& out_dim() const { return out_dim_; }
  Parameter& weight() { return weight_; }
  Parameter& bias() { return bias_; }

 private:
  ir::Dim in_dim_, out_dim_;
  Parameter weight_, bias_;
  bool with_bias_;
};

/// An LSTM's state between frames: output h and cell c, each [..., out].
struct LstmState {
  Tensor h, c;
};

/// A unidirectional LSTM over a spatial axis, run by RETURNN's fused native
/// kernel (NativeLstm2). Params, in RETURNN's gate layout:
/// ff_weight [in, 4*out], rec_weight [out, 4*out], bias [4*out].
/// Example: `auto y = lstm->forward(x, time);`
class Lstm : public Module {
 public:
  enum class Direction { kForward, kBackward };
  Lstm(ir::Dim in_dim, ir::Dim out_dim, Direction direction = Direction::kForward);
  Tensor forward(const Tensor& x, const ir::Dim& axis,
                 std::source_location loc = std::source_location::current()) const;
  /// One frame: x [..., in] and the state before it; returns the state after
  /// (its h is the frame's output). The same params and numbers as forward
  /// (RETURNN's NativeLstm2: c = f * c_prev + i * tanh(j), h = o * tanh(c),
  /// gates [j, i, f, o]), for a loop body such as a decoder's. Forward only.
  LstmState step(const Tensor& x, const LstmState& state,
                 std::source_location loc = std::source_location::current()) const;
  /// forward from the state `initial` (undefined h and c: zeros), and the
  /// state after each sequence's last frame (a backward LSTM's: its first).
  std::pair<Tensor, LstmState> forward_with_state(
      const Tensor& x, const ir::Dim& axis, const LstmState& initial = {},
      std::source_location loc = std::source_location::current()) const;

  const ir::Dim& in_dim() const { return in_dim_; }
  const ir::Dim& out_dim() const { return out_dim_; }
  Parameter& ff_weight() { return ff_weight_; }
  Parameter& rec_weight() { return rec_weight_; }
  Parameter& bias() { return bias_; }

 private:
  Tensor run(const Tensor& x, const ir::Dim& axis, std::source_location loc,
             const LstmState& initial = {}) const;

  ir::Dim in_dim_, out_dim_;
  Direction direction_;
  Parameter ff_weight_, rec_weight_, bias_;
};

/// A bidirectional LSTM: a forward and a backward Lstm over the same axis,
/// concatenated; the output dim is fw_dim + bw_dim. Params: fw.*, bw.*.
class BLstm : public Module {
 public:
  BLstm(ir::Dim in_dim, ir::Dim fw_dim, ir::Dim bw_dim);
  Tensor forward(const Tensor& x, const ir::Dim& axis,
                 std::source_location loc = std::source_location::current()) const;
  /// fw_dim + bw_dim.
  ir::Dim out_dim() const { return out_dim_; }

  std::shared_ptr<Lstm> fw, bw;

 private:
  ir::Dim out_dim_;
};

/// Layer normalization over `dim`: (x - mean) / sqrt(var + eps) * scale + bias.
/// Params: scale [dim] (norm-scale, 1), bias [dim] (norm-shift, 0).
class LayerNorm : public Module {
 public:
  explicit LayerNorm(ir::Dim dim, double epsilon = 1e-6);
  Tensor forward(const Tensor& x, std::source_location loc = std::source_location::current()) const;
  Parameter& scale() { return scale_; }
  Parameter& bias() { return bias_; }

 private:
  ir::Dim dim_;
  double epsilon_;
  Parameter scale_, bias_;
};

/// RMS normalization over `dim`: x / sqrt(mean(x^2) + eps) * scale.
/// Params: scale [dim] (norm-scale, 1).
class RmsNorm : public Module {
 public:
  explicit RmsNorm(ir::Dim dim, double epsilon = 1e-6);
  Tensor forward(const Tensor& x, std::source_location loc = std::source_location::current()) const;
  Parameter& scale() { return scale_; }

 private:
  ir::Dim dim_;
  double epsilon_;
  Parameter scale_;
};

/// Group normalization (Wu and He 2018): `dim` split into `num_groups`
/// groups; each group normalized by its mean and variance over its channels
/// and, given to forward, `spatial_axes` (torch.nn.GroupNorm and rf's
/// GroupNormSpatial with the time axis: per sequence, within its length;
/// without: per frame, rf's GroupNorm), then scale * x + bias per channel.
/// Params: scale [dim] (norm-scale, 1), bias [dim] (norm-shift, 0).
/// Example: `GroupNorm(channels, 8)->forward(x, {time})`.
class GroupNorm : public Module {
 public:
  GroupNorm(ir::Dim dim, int64_t num_groups, double epsilon = 1e-5);
  Tensor forward(const Tensor& x, const std::vector<ir::Dim>& spatial_axes = {},
                 std::source_location loc = std::source_location::current()) const;
  Parameter& scale() { return scale_; }
  Parameter& bias() { return bias_; }

 private:
  ir::Dim dim_, groups_, per_group_;
  double epsilon_;
  Parameter scale_, bias_;
};

/// Options of a convolution over D spatial axes (Conv1dOptions,
/// Conv2dOptions). Padding "same" keeps ceil(n / stride) positions, "valid"
/// only full windows. groups > 1: grouped convolution (groups == in == out:
/// depthwise), the weight's in dim is in // groups. Example (depthwise, as in
/// the Conformer): `Conv1dOptions(d, d, 31).groups(*d.size())`.
template <size_t D>
struct ConvOptions {
  ConvOptions(ir::Dim in_dim, ir::Dim out_dim, std::array<int64_t, D> kernel_size)
      : in_dim_(in_dim), out_dim_(out_dim), kernel_size_(kernel_size) {
    stride_.fill(1);
  }
  /// One kernel size (and stride) for a 1-D convolution.
  ConvOptions(ir::Dim in_dim, ir::Dim out_dim, int64_t kernel_size) requires(D == 1)
      : ConvOptions(in_dim, out_dim, std::array<int64_t, 1>{kernel_size}) {}
  ConvOptions& stride(int64_t s) requires(D == 1) {
    stride_ = {s};
    return *this;
  }
  RETC_ARG(ir::Dim, in_dim);
  RETC_ARG(ir::Dim, out_dim);
  RETC_ARG(std::array<int64_t RETC_COMMA D>, kernel_size);
  RETC_ARG(std::array<int64_t RETC_COMMA D>, stride);
  RETC_ARG(int64_t, dilation) = 1;
  RETC_ARG(std::string, padding) = "same";
  RETC_ARG(int64_t, groups) = 1;
};
using Conv1dOptions = ConvOptions<1>;
using Conv2dOptions = ConvOptions<2>;

/// Convolution over 1 to 3 spatial axes (Conv1d, Conv2d). Params: weight
/// [kernel dims..., in // groups, out] (fan_in = kernel volume * in/groups),
/// bias [out]. The output's spatial axes: out_axis(in_axis), the input axis
/// itself for stride 1 with "same" padding, else a dim made once per input axis.
/// Padding: "valid", "same" or "same_consistent". "same" with a stride above 1
/// pads as TensorFlow does, on both targets (the torch config sets
/// rf_use_consistent_same_padding = False): the left padding depends on the
/// batch's longest sequence, so a sequence's frames can differ alone and
/// batched. "same_consistent" pads as rf's consistent same padding (its
/// default since behavior version 24): (kernel - 1) * dilation frames around
/// each sequence, the left half first, then a valid convolution; the same
/// frame counts as "same", and a sequence's frames do not depend on its batch
/// (on both targets: a pad and a conv in the IR). With stride 1, "same" and
/// "same_consistent" are the same.
class Conv : public Module {
 public:
  template <size_t D>
  Conv(std::string type_name, const ConvOptions<D>& o)
      : Conv(std::move(type_name), o.in_dim(), o.out_dim(),
             std::vector<int64_t>(o.kernel_size().begin(), o.kernel_size().end()),
             std::vector<int64_t>(o.stride().begin(), o.stride().end()), o.dilation(), o.padding(),
             o.groups()) {}
  Tensor forward(const Tensor& x, const std::vector<ir::Dim>& axes,
                 std::source_location loc = std::source_location::current()) const;
  /// The output axis for the input axis at spatial position `i`.
  ir::Dim out_axis(const ir::Dim& in_axis, size_t i = 0) const;
  const ir::Dim& in_dim() const { return in_dim_; }
  const ir::Dim& out_dim() const { return out_dim_; }
  Parameter& weight() { return weight_; }
  Parameter& bias() { return bias_; }

 private:
  Conv(std::string type_name, ir::Dim in_dim, ir::Dim out_dim, std::vector<int64_t> kernel,
       std::vector<int64_t> strides, int64_t dilation, std::string padding, int64_t groups);

  ir::Dim in_dim_, out_dim_;
  std::vector<int64_t> kernel_, strides_;
  int64_t dilation_;
  std::string padding_;
  int64_t groups_;
  Parameter weight_, bias_;
  mutable std::vector<std::pair<ir::Dim, ir::Dim>> out_axes_;  // in -> out, made on first use
};

/// 1-D convolution over a spatial axis. Example (strided):
/// `std::make_shared<nn::Conv1d>(nn::Conv1dOptions(in, out, 3).stride(2))`.
class Conv1d : public Conv {
 public:
  explicit Conv1d(const Conv1dOptions& opts) : Conv("conv1d", opts) {}
  Tensor forward(const Tensor& x, const ir::Dim& axis,
                 std::source_location loc = std::source_location::current()) const {
    return Conv::forward(x, {axis}, loc);
  }
};

/// 2-D convolution over two spatial axes (e.g. time and a feature axis
/// split off as spatial). Kernel and strides per axis.
class Conv2d : public Conv {
 public:
  explicit Conv2d(const Conv2dOptions& opts) : Conv("conv2d", opts) {}
  Tensor forward(const Tensor& x, const ir::Dim& axis0, const ir::Dim& axis1,
                 std::source_location loc = std::source_location::current()) const {
    return Conv::forward(x, {axis0, axis1}, loc);
  }
};

/// Options of a transposed convolution over D spatial axes. Padding
/// "valid" (the default; the kernel at least the stride) makes n frames
/// n * stride + kernel - stride, "same" n * stride (tf target only: torch's
/// has none). Example (3x upsampling in time, as the 2021 Switchboard
/// hybrid setup): `TransposedConv1dOptions(d, d, 3).stride(3)`.
template <size_t D>
struct TransposedConvOptions {
  TransposedConvOptions(ir::Dim in_dim, ir::Dim out_dim, std::array<int64_t, D> kernel_size)
      : in_dim_(in_dim), out_dim_(out_dim), kernel_size_(kernel_size) {
    stride_.fill(1);
  }
  TransposedConvOptions(ir::Dim in_dim, ir::Dim out_dim, int64_t kernel_size) requires(D == 1)
      : TransposedConvOptions(in_dim, out_dim, std::array<int64_t, 1>{kernel_size}) {}
  TransposedConvOptions& stride(int64_t s) requires(D == 1) {
    stride_ = {s};
    return *this;
  }
  RETC_ARG(ir::Dim, in_dim);
  RETC_ARG(ir::Dim, out_dim);
  RETC_ARG(std::array<int64_t RETC_COMMA D>, kernel_size);
  RETC_ARG(std::array<int64_t RETC_COMMA D>, stride);
  RETC_ARG(std::string, padding) = "valid";
  RETC_ARG(bool, bias) = true;
};
using TransposedConv1dOptions = TransposedConvOptions<1>;
using TransposedConv2dOptions = TransposedConvOptions<2>;

/// Transposed convolution over 1 to 3 spatial axes (TransposedConv1d,
/// TransposedConv2d). Params: weight [kernel dims..., out, in] (RETURNN's
/// layout; TF's fans: fan_in = kernel volume * out), bias [out] (unless
/// bias(false)). out_axis(in_axis): a dim made once per input axis.
class TransposedConv : public Module {
 public:
  template <size_t D>
  TransposedConv(std::string type_name, const TransposedConvOptions<D>& o)
      : TransposedConv(std::move(type_name), o.in_dim(), o.out_dim(),
                       std::vector<int64_t>(o.kernel_size().begin(), o.kernel_size().end()),
                       std::vector<int64_t>(o.stride().begin(), o.stride().end()), o.padding(),
                       o.bias()) {}
  Tensor forward(const Tensor& x, const std::vector<ir::Dim>& axes,
                 std::source_location loc = std::source_location::current()) const;
  ir::Dim out_axis(const ir::Dim& in_axis, size_t i = 0) const;
  const ir::Dim& in_dim() const { return in_dim_; }
  const ir::Dim& out_dim() const { return out_dim_; }
  Parameter& weight() { return weight_; }
  Parameter& bias() { return bias_; }

 private:
  TransposedConv(std::string type_name, ir::Dim in_dim, ir::Dim out_dim,
                 std::vector<int64_t> kernel, std::vector<int64_t> strides, std::string padding,
                 bool with_bias);

  ir::Dim in_dim_, out_dim_;
  std::vector<int64_t> kernel_, strides_;
  std::string padding_;
  Parameter weight_, bias_;
  mutable std::vector<std::pair<ir::Dim, ir::Dim>> out_axes_;
};

/// 1-D transposed convolution over a spatial axis.
class TransposedConv1d : public TransposedConv {
 public:
  explicit TransposedConv1d(const TransposedConv1dOptions& opts)
      : TransposedConv("transposed_conv1d", opts) {}
  Tensor forward(const Tensor& x, const ir::Dim& axis,
                 std::source_location loc = std::source_location::current()) const {
    return TransposedConv::forward(x, {axis}, loc);
  }
};

/// 2-D transposed convolution over two spatial axes.
class TransposedConv2d : public TransposedConv {
 public:
  explicit TransposedConv2d(const TransposedConv2dOptions& opts)
      : TransposedConv("transposed_conv2d", opts) {}
  Tensor forward(const Tensor& x, const ir::Dim& axis0, const ir::Dim& axis1,
                 std::source_location loc = std::source_location::current()) const {
    return TransposedConv::forward(x, {axis0, axis1}, loc);
  }
};

/// BatchNorm's options: `BatchNormOptions().affine(false).masked(false)`.
struct BatchNormOptions {
  RETC_ARG(double, epsilon) = 1e-5;
  /// Training: running = (1 - momentum) * running + momentum * batch.
  RETC_ARG(double, momentum) = 0.1;
  /// A learned scale and bias; false: none (rf's BatchNorm affine=False).
  RETC_ARG(bool, affine) = true;
  /// Statistics over all frames but padding (RETURNN's masked_time, rf's
  /// use_mask=True); false: over the padded tensor, as torch's batch_norm and
  /// TF's fused op compute them (nn::batch_norm says how).
  RETC_ARG(bool, masked) = true;
};

/// Batch normalization over the feature `dim`: statistics over all other
/// axes (but padding frames, unless masked(false)). Training normalizes with
/// the batch statistics and updates running ones (new = (1 - momentum) * old
/// + momentum * batch); evaluation uses the running ones. Params: scale [dim]
/// (1) and bias [dim] (0) unless affine(false), running_mean [dim] (0) and
/// running_var [dim] (1), the last two auxiliary and not trainable (they are
/// saved in checkpoints). As rf's BatchNorm(dim, affine=, use_mask=, eps=,
/// momentum=) with the same params (test_modules.py batch_norm_options).
class BatchNorm : public Module {
 public:
  explicit BatchNorm(ir::Dim dim, double epsilon = 1e-5, double momentum = 0.1);
  BatchNorm(ir::Dim dim, const BatchNormOptions& opts);
  Tensor forward(const Tensor& x, std::source_location loc = std::source_location::current()) const;
  /// The learned scale and bias (affine only).
  Parameter& scale();
  Parameter& bias();

 private:
  ir::Dim dim_;
  BatchNormOptions opts_;
  Parameter scale_, bias_, running_mean_, running_var_;
};

/// Dropout as a module (for Sequential): nn::dropout(x, rate), elementwise.
class Dropout : public Module {
 public:
  explicit Dropout(double rate) : Module("dropout"), rate_(rate) {}
  Tensor forward(const Tensor& x, std::source_location loc = std::source_location::current()) const;

 private:
  double rate_;
};

/// A module whose forward takes the input alone: `forward(x[, loc])` (Linear, LayerNorm, ...).
template <class M>
concept ForwardsInput = requires(const M& m, const Tensor& x, std::source_location l) {
  { m.forward(x, l) } -> std::convertible_to<Tensor>;
}
|| requires(const M& m, const Tensor& x) {
  { m.forward(x) } -> std::convertible_to<Tensor>;
};
/// A module whose forward takes the input and its time dim: `forward(x, time[, loc])`
/// (Lstm, BLstm, ConformerBlock, ...).
template <class M>
concept ForwardsWithTime = requires(const M& m, const Tensor& x, const ir::Dim& t,
                                    std::source_location l) {
  { m.forward(x, t, l) } -> std::convertible_to<Tensor>;
}
|| requires(const M& m, const Tensor& x, const ir::Dim& t) {
  { m.forward(x, t) } -> std::convertible_to<Tensor>;
};

/// Modules (or functions) applied in order, each to the previous output;
/// modules are registered as "0", "1", ... or by the name given (as
/// torch::nn::Sequential's named modules). Every module fits: one whose
/// forward needs the time dim (an LSTM, a Conformer block) gets the one
/// forward(x, time) is called with. Example:
/// `seq->append(lin1); seq->append(nn::relu); seq->append("out", lin2);`
class Sequential : public Module {
 public:
  Sequential() : Module("sequential") {}
  /// A module with `forward(x[, loc])` or `forward(x, time[, loc])`.
  template <class M>
  std::shared_ptr<M> append(std::shared_ptr<M> m,
                            std::source_location loc = std::source_location::current()) {
    return append(std::to_string(steps_.size()), std::move(m), loc);
  }
  /// A module registered as `name` (its params: `name.weight`, ...).
  template <class M>
  std::shared_ptr<M> append(std::string name, std::shared_ptr<M> m,
                            std::source_location loc = std::source_location::current()) {
    static_assert(ForwardsInput<M> || ForwardsWithTime<M>,
                  "nn::Sequential::append: the module's forward must take (const Tensor& x) or "
                  "(const Tensor& x, const ir::Dim& time); call it from your own forward instead");
    register_module(name, m, loc);
    Step step{std::move(name), !ForwardsInput<M>, {}};
    // With the time dim where the module takes it (a nested Sequential takes both).
    step.run = [m](const Tensor& x, const ir::Dim* time, std::source_location l) -> Tensor {
      if constexpr (ForwardsWithTime<M>) {
        if (time || !ForwardsInput<M>) {
          if constexpr (requires { m->forward(x, *time, l); })
            return m->forward(x, *time, l);
          else
            return m->forward(x, *time);
        }
      }
      if constexpr (ForwardsInput<M>) {
        if constexpr (requires { m->forward(x, l); })
          return m->forward(x, l);
        else
          return m->forward(x);
      }
      return x;  // unreachable: a module that needs the time dim has it (Sequential::run)
    };
    steps_.push_back(std::move(step));
    return m;
  }
  /// A function such as nn::relu (its index is skipped in module names).
  void append(Tensor (*fn)(const Tensor&, std::source_location)) {
    steps_.push_back({"", false, [fn](const Tensor& x, const ir::Dim*, std::source_location l) {
                        return fn(x, l);
                      }});
  }
  /// Fails at `loc` if a module needs the time dim (call forward(x, time)).
  Tensor forward(const Tensor& x, std::source_location loc = std::source_location::current()) const;
  /// `time` goes to every module whose forward takes it.
  Tensor forward(const Tensor& x, const ir::Dim& time,
                 std::source_location loc = std::source_location::current()) const;
  size_t size() const { return steps_.size(); }

 private:
  struct Step {
    std::string name;  ///< "" for a function
    bool needs_time = false;
    std::function<Tensor(const Tensor&, const ir::Dim*, std::source_location)> run;
  };
  Tensor run(const Tensor& x, const ir::Dim* time, std::source_location loc) const;
  std::vector<Step> steps_;
};

/// Modules registered as "0", "1", ...; iterate with size() and at().
class ModuleList : public Module {
 public:
  ModuleList() : Module("module_list") {}
  template <class M>
  std::shared_ptr<M> append(std::shared_ptr<M> m,
                            std::source_location loc = std::source_location::current()) {
    items_.push_back(m);
    return register_module(std::to_string(items_.size() - 1), std::move(m), loc);
  }
  size_t size() const { return items_.size(); }
  template <class M>
  std::shared_ptr<M> at(size_t i) const {
    return std::static_pointer_cast<M>(items_.at(i));
  }

 private:
  std::vector<std::shared_ptr<Module>> items_;
};

/// Params registered as "0", "1", ... (torch::nn::ParameterList), for a
/// module that holds a list of them. Example:
/// `auto scales = register_module("scales", std::make_shared<nn::ParameterList>());`
/// `scales->append({dim}, ir::ParamKind::kNormScale);  // scales.0`
class ParameterList : public Module {
 public:
  ParameterList() : Module("parameter_list") {}
  /// A new param of these dims (the kind's default initial value).
  Parameter& append(std::vector<ir::Dim> dims, ir::ParamKind kind = ir::ParamKind::kWeight,
                    std::source_location loc = std::source_location::current()) {
    params_.push_back(
        register_parameter(std::to_string(params_.size()), std::move(dims), kind, loc));
    return params_.back();
  }
  size_t size() const { return params_.size(); }
  Parameter& at(size_t i) { return params_.at(i); }
  const Parameter& at(size_t i) const { return params_.at(i); }

 private:
  std::deque<Parameter> params_;  // stable references
};

/// A lookup table: forward(ids) gathers rows of weight [vocab, dim] by the
/// sparse ids (whose sparse dim must be `vocab`). Params: weight (embedding).
class Embedding : public Module {
 public:
  Embedding(ir::Dim vocab, ir::Dim dim);
  Tensor forward(const Tensor& ids,
                 std::source_location loc = std::source_location::current()) const;
  /// Logits over the vocab from `h` [..., dim]: h . weight, the output layer
  /// tied to the embedding (weight tying; rf's TransformerDecoder
  /// share_embedding). Example: `logits = embed->unembed(decoder->forward(...))`.
  Tensor unembed(const Tensor& h, std::source_location loc = std::source_location::current()) const;
  Parameter& weight() { return weight_; }

 private:
  ir::Dim vocab_, dim_;
  Parameter weight_;
};

/// Checks that `x` has `dim`; otherwise fails with a message naming `m`,
/// e.g. `linear 'out': input dim 'feat'(512) does not match in_dim 'hidden'(256)`.
void check_input_dim(const Module& m, const Tensor& x, const ir::Dim& dim,
                     absl::string_view dim_role, const ir::SourceLoc& loc);

}  // namespace retc::nn
