// Tensor: a handle to a node of the graph being built, with arithmetic and
// the functional ops (plain functions: they own no parameters).
#pragma once

#include <functional>
#include <source_location>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace retc::nn {

class Builder;

/// A value in the model being built. Cheap to copy.
/// Example: `nn::Tensor y = nn::relu(lin->forward(x)) + x;`
class Tensor {
 public:
  Tensor() = default;
  Tensor(Builder* b, ir::NodeId id) : builder_(b), id_(id) {}

  const ir::TensorType& type() const;
  const std::vector<ir::Dim>& dims() const { return type().dims; }
  ir::NodeId id() const { return id_; }
  Builder& builder() const { return *builder_; }
  bool defined() const { return builder_ != nullptr; }

  /// Makes this a network output, named `name` ("output" is RETURNN's default).
  const Tensor& mark_as_output(std::string name = "output",
                               std::source_location loc = std::source_location::current()) const;
  /// Makes this what `retc search` decodes (RETURNN's search output layer):
  /// sparse labels over a dim, e.g. a loop's stacked choices or a CTC decoding.
  const Tensor& mark_as_search_output(
      std::string name = "hyps", std::source_location loc = std::source_location::current()) const;
  /// Makes this a training loss (currently: a softmax_cross_entropy result),
  /// reported by RETURNN as `<set>_score_<name>` and `<set>_error_<name>`.
  const Tensor& mark_as_loss(std::string name,
                             std::source_location loc = std::source_location::current()) const;

 private:
  Builder* builder_ = nullptr;
  ir::NodeId id_;
};

// Elementwise arithmetic, broadcasting by dim identity. The named functions
// report errors at the caller's line; the operators at the line of the
// enclosing module call, or else where the later operand was made.

/// An elementwise binary op of the kind list (RETC_FOR_EACH_BINARY_KIND in
/// ir/node_kind.h); the named functions below call it.
Tensor elementwise(ir::NodeKind kind, const Tensor& a, const Tensor& b,
                   std::source_location loc = std::source_location::current());
inline Tensor add(const Tensor& a, const Tensor& b,
                  std::source_location loc = std::source_location::current()) {
  return elementwise(ir::NodeKind::kAdd, a, b, loc);
}
inline Tensor sub(const Tensor& a, const Tensor& b,
                  std::source_location loc = std::source_location::current()) {
  return elementwise(ir::NodeKind::kSub, a, b, loc);
}
inline Tensor mul(const Tensor& a, const Tensor& b,
                  std::source_location loc = std::source_location::current()) {
  return elementwise(ir::NodeKind::kMul, a, b, loc);
}
inline Tensor div(const Tensor& a, const Tensor& b,
                  std::source_location loc = std::source_location::current()) {
  return elementwise(ir::NodeKind::kDiv, a, b, loc);
}
/// Division rounded down, and the remainder of it (the sign of b, as
/// Python's // and %), elementwise; on ints or floats.
/// Example: `nn::floor_div(t, k)` and `nn::mod(t, k)` split a frame index.
inline Tensor floor_div(const Tensor& a, const Tensor& b,
                        std::source_location loc = std::source_location::current()) {
  return elementwise(ir::NodeKind::kFloorDiv, a, b, loc);
}
inline Tensor mod(const Tensor& a, const Tensor& b,
                  std::source_location loc = std::source_location::current()) {
  return elementwise(ir::NodeKind::kMod, a, b, loc);
}
/// a to the power b, elementwise (floats; a negative base wants an integral
/// exponent). Example: `nn::pow(nn::relu(x), nn::constant(b, 2.0))`.
inline Tensor pow(const Tensor& a, const Tensor& b,
                  std::source_location loc = std::source_location::current()) {
  return elementwise(ir::NodeKind::kPow, a, b, loc);
}
/// Elementwise min / max. Example: `nn::maximum(x, nn::constant(b, 0.0))` is relu.
inline Tensor minimum(const Tensor& a, const Tensor& b,
                      std::source_location loc = std::source_location::current()) {
  return elementwise(ir::NodeKind::kMinimum, a, b, loc);
}
inline Tensor maximum(const Tensor& a, const Tensor& b,
                      std::source_location loc = std::source_location::current()) {
  return elementwise(ir::NodeKind::kMaximum, a, b, loc);
}
/// Elementwise and / or of bool tensors (e.g. masks from nn::compare).
inline Tensor logical_and(const Tensor& a, const Tensor& b,
                          std::source_location loc = std::source_location::current()) {
  return elementwise(ir::NodeKind::kLogicalAnd, a, b, loc);
}
inline Tensor logical_or(const Tensor& a, const Tensor& b,
                         std::source_location loc = std::source_location::current()) {
  return elementwise(ir::NodeKind::kLogicalOr, a, b, loc);
}
Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);

/// Contracts `reduce` dims shared by `a` and `b`. Example: `dot(x, w, {in_dim})`.
Tensor dot(const Tensor& a, const Tensor& b, std::vector<ir::Dim> reduce,
           std::source_location loc = std::source_location::current());

/// Activations: relu, tanh, sigmoid, gelu, elu, swish, exp, log, abs.
Tensor activation(const Tensor& x, std::string func,
                  std::source_location loc = std::source_location::current());
Tensor relu(const Tensor& x, std::source_location loc = std::source_location::current());
Tensor tanh(const Tensor& x, std::source_location loc = std::source_location::current());
Tensor sigmoid(const Tensor& x, std::source_location loc = std::source_location::current());
/// x * sigmoid(x) (SiLU).
Tensor swish(const Tensor& x, std::source_location loc = std::source_location::current());

/// `name` on x: an nn::activation function, or "relu_square" (relu(x)^2).
/// The feed-forward activations of TransformerOptions and ConformerOptions.
Tensor named_activation(const Tensor& x, const std::string& name,
                        std::source_location loc = std::source_location::current());
/// Whether named_activation knows `name`.
bool is_named_activation(const std::string& name);

/// Dropout with drop probability `rate` (kept values scaled by 1/(1-rate)),
/// applied in training only. The mask varies along `axes` and is shared
/// along the other dims; by default it varies along every dim (elementwise,
/// as in PyTorch).
Tensor dropout(const Tensor& x, double rate, std::vector<ir::Dim> axes = {},
               std::source_location loc = std::source_location::current());

/// Stochastic depth (row mode): in training, each sequence (batch entry)
/// drops the residual `branch` with probability `p` and scales it by
/// 1/(1-p) otherwise; in evaluation, `x + branch`.
Tensor stochastic_depth(const Tensor& x, const Tensor& branch, double p,
                        std::source_location loc = std::source_location::current());

/// Identity in the forward pass; multiplies the gradient by `scale`.
Tensor scale_gradient(const Tensor& x, double scale,
                      std::source_location loc = std::source_location::current());
/// Identity in the forward pass; no gradient flows back through it.
Tensor stop_gradient(const Tensor& x, std::source_location loc = std::source_location::current());

/// A constant tensor (of the given static dims; a scalar by default).
Tensor constant(Builder& b, double value, std::vector<ir::Dim> shape = {},
                std::source_location loc = std::source_location::current());
/// A constant over any dims, the batch and dynamic ones included: each
/// dynamic dim takes its sizes from a tensor of `sizes_from` that has it.
/// Example: `nn::constant(b, 0.0, {Dim::batch(), enc_time}, {enc})`.
Tensor constant(Builder& b, double value, std::vector<ir::Dim> shape,
                const std::vector<Tensor>& sizes_from,
                std::source_location loc = std::source_location::current());
/// A constant vector over the static `dim`, one value per entry (as
/// returnn_common's nn.constant of an array): the scalars stacked along dim.
/// Example: `nn::constant(b, {0.0, 2.5, 5.0}, Dim::feature("f", 3))`.
Tensor constant(Builder& b, const std::vector<double>& values, const ir::Dim& dim,
                std::source_location loc = std::source_location::current());
/// Seeded random values: the same values whenever evaluated (meant for
/// initial values, see Parameter::set_initial). `seed` must differ between
/// tensors that should differ. Static dims only.
Tensor seeded_random_normal(Builder& b, std::vector<ir::Dim> shape, double mean, double stddev,
                            int64_t seed,
                            std::source_location loc = std::source_location::current());
Tensor seeded_random_uniform(Builder& b, std::vector<ir::Dim> shape, double minval, double maxval,
                             int64_t seed,
                             std::source_location loc = std::source_location::current());
/// Fresh random numbers: new ones at every step and, in a loop, at every
/// frame; two runs with the config's same `random_seed` draw the same ones
/// (TF: RETURNN's random layer with its state variable; torch: rf's random
/// numbers, which RETURNN's engine seeds). `shape` may hold the batch and
/// dynamic dims: each dynamic dim takes its sizes from a tensor of
/// `sizes_from` that has it. In a loop, pass a value of the loop (e.g. the
/// frame) in `sizes_from` to draw per frame; numbers that depend on nothing
/// in the loop are drawn once per step. Uniform in [minval, maxval).
Tensor random_uniform(Builder& b, std::vector<ir::Dim> shape, double minval = 0.0,
                      double maxval = 1.0, const std::vector<Tensor>& sizes_from = {},
                      std::source_location loc = std::source_location::current());
Tensor random_normal(Builder& b, std::vector<ir::Dim> shape, double mean = 0.0, double stddev = 1.0,
                     const std::vector<Tensor>& sizes_from = {},
                     std::source_location loc = std::source_location::current());

/// Reduces `axes` with mode "sum", "mean", "max", "min" or "logsumexp"
/// (dynamic axes respect sequence lengths).
Tensor reduce(const Tensor& x, std::string mode, std::vector<ir::Dim> axes,
              std::source_location loc = std::source_location::current());
/// The index of the largest (smallest) entry along the static `axis`: int32,
/// sparse over `axis` (e.g. the best class, for nn::gather or an error rate).
Tensor argmax(const Tensor& x, const ir::Dim& axis,
              std::source_location loc = std::source_location::current());
Tensor argmin(const Tensor& x, const ir::Dim& axis,
              std::source_location loc = std::source_location::current());
/// (x - mean) / sqrt(var + epsilon), mean and variance over `axes`.
Tensor normalize(const Tensor& x, std::vector<ir::Dim> axes, double epsilon = 1e-6,
                 std::source_location loc = std::source_location::current());
/// Softmax (or log-softmax) over `axis`; a dynamic axis is masked by length.
Tensor softmax(const Tensor& x, const ir::Dim& axis,
               std::source_location loc = std::source_location::current());
Tensor log_softmax(const Tensor& x, const ir::Dim& axis,
                   std::source_location loc = std::source_location::current());
/// Rows of `x` along `axis` picked by the sparse `indices` (sparse over `axis`).
Tensor gather(const Tensor& x, const Tensor& indices, const ir::Dim& axis,
              std::source_location loc = std::source_location::current());
/// The inverse of gather: `x`'s frames along `axis` into the dim that the int
/// `indices` are sparse over (the out dim; `axis` one of their dims, e.g.
/// nn::as_indices of a word's number per frame): entry o combines the frames
/// whose index is o by `mode`, "sum", "max", "min", "mean", "logsumexp" or
/// "argmax" (rf.scatter's modes; argmax: the position along `axis` of the
/// first frame that holds the max, int32). Frames past `axis`'s lengths and
/// indices outside the out dim write nothing (logsumexp and argmax: their
/// indices must lie in the out dim);
/// entries that nothing writes are `fill`. The result has the indices' dims,
/// the out dim in place of `axis`, then `x`'s other dims.
/// Example: `nn::scatter(frames, nn::as_indices(word_of_frame, words), time, "mean")`
/// averages each word's frames.
Tensor scatter(const Tensor& x, const Tensor& indices, const ir::Dim& axis,
               const std::string& mode = "sum", double fill = 0.0,
               std::source_location loc = std::source_location::current());
/// Concatenates `a` along `axis_a` and `b` along `axis_b` (all other dims
/// equal); the new axis is `axis_a + axis_b`.
Tensor concat(const Tensor& a, const ir::Dim& axis_a, const Tensor& b, const ir::Dim& axis_b,
              std::source_location loc = std::source_location::current());

/// `x` along `axis` from `start`, `out_dim.size()` entries (static axes).
Tensor slice(const Tensor& x, const ir::Dim& axis, int64_t start, const ir::Dim& out_dim,
             std::source_location loc = std::source_location::current());
/// `x` along the dynamic `axis` from a start per sequence (int32 [B]),
/// `out_dim.size()` entries (a new static dim); entries past a sequence's
/// length (or before 0) are 0. Example: a window of 20 frames at
/// each sequence's own offset, `nn::slice(x, time, offsets, Dim::spatial("w", 20))`.
Tensor slice(const Tensor& x, const ir::Dim& axis, const Tensor& start, const ir::Dim& out_dim,
             std::source_location loc = std::source_location::current());
/// `x` reversed along `axis`, each sequence within its length (the padding
/// stays after the end): frame t of a sequence of n is frame n - 1 - t.
Tensor reverse(const Tensor& x, const ir::Dim& axis,
               std::source_location loc = std::source_location::current());
/// Splits the static `axis` into consecutive parts along the `parts` dims
/// (their sizes sum to the axis size). Example: GLU halves,
/// `auto ab = split(x, two_d, {d_a, d_b});`
std::vector<Tensor> split(const Tensor& x, const ir::Dim& axis, const std::vector<ir::Dim>& parts,
                          std::source_location loc = std::source_location::current());
/// Reshapes the static `axis` into `dims` (sizes multiply to its size),
/// e.g. a key dim into [heads, key_per_head].
Tensor split_dims(const Tensor& x, const ir::Dim& axis, std::vector<ir::Dim> dims,
                  std::source_location loc = std::source_location::current());
/// Merges the static `axes` into `out_dim` (sizes multiply to its size).
Tensor merge_dims(const Tensor& x, std::vector<ir::Dim> axes, const ir::Dim& out_dim,
                  std::source_location loc = std::source_location::current());

/// The axis a window of `window` (with `dilation`) and `stride` leaves of
/// `axis`: the axis itself for stride 1 with "same" padding, else a new dim
/// ("same": ceil(n / stride) positions; "valid": ceil((n - span + 1) / stride)).
ir::Dim windowed_dim(const ir::Dim& axis, int64_t window, int64_t stride = 1, int64_t dilation = 1,
                     const std::string& padding = "same");

/// Max or average pooling ("max", "avg") over `axes` with window `size` and
/// `strides` (default: the window). `out_axes` default to windowed_dim().
/// Frames past a sequence's end never count (for "max" they are -inf);
/// "avg" over a dynamic axis needs padding "valid", whose windows lie within
/// the sequence.
Tensor pool(const Tensor& x, std::string mode, std::vector<ir::Dim> axes, std::vector<int64_t> size,
            std::vector<int64_t> strides = {}, std::string padding = "same",
            std::vector<ir::Dim> out_axes = {},
            std::source_location loc = std::source_location::current());

/// Shifts `x` along `axis` by `amount` (positive: later), zero padded: the
/// decoder input of teacher forcing is `shift_right(embed(targets), time)`.
/// Sparse labels shift too, padded with `pad_value` (a BOS index):
/// `embed(shift_right(targets, time, 1, bos))`.
Tensor shift_right(const Tensor& x, const ir::Dim& axis, int64_t amount = 1, double pad_value = 0.0,
                   std::source_location loc = std::source_location::current());
/// x + the sinusoidal position signal of Vaswani et al. along `axis` (over
/// x's one feature dim, of even size).
Tensor add_positional_encoding(const Tensor& x, const ir::Dim& axis,
                               std::source_location loc = std::source_location::current());
/// Sets the frames past each sequence's length along the dynamic `axis` to `value`.
Tensor mask_padding(const Tensor& x, const ir::Dim& axis, double value = 0.0,
                    std::source_location loc = std::source_location::current());

/// The train flag: a scalar bool, true in training.
Tensor train_flag(Builder& b, std::source_location loc = std::source_location::current());
/// The global train step (RETURNN's: steps of all epochs so far): a scalar
/// int64, for schedules such as SpecAugment's.
Tensor global_train_step(Builder& b, std::source_location loc = std::source_location::current());
/// 0, 1, ..., n-1 along the static `dim` (int32, sparse over `dim`).
Tensor range(Builder& b, const ir::Dim& dim,
             std::source_location loc = std::source_location::current());
/// The positions 0, 1, ... along the `axis` of `x` (int32; on a static axis
/// the same as `range(b, axis)`).
Tensor range_in_axis(const Tensor& x, const ir::Dim& axis,
                     std::source_location loc = std::source_location::current());
/// Elementwise comparison, broadcasting by dim: op is "equal", "not_equal",
/// "less", "less_equal", "greater" or "greater_equal". Result: bool.
Tensor compare(const Tensor& a, const Tensor& b, std::string op,
               std::source_location loc = std::source_location::current());
/// `x` as `dtype` (dense).
Tensor cast(const Tensor& x, ir::DType dtype,
            std::source_location loc = std::source_location::current());
/// A constant label: int32 over `shape`, sparse over `vocab` (0 <= label <
/// its size), e.g. a decoder's start label as a loop state. Dynamic dims of
/// `shape` take their sizes from `sizes_from` (as nn::constant).
/// Example: `loop.state(nn::sparse_constant(b, bos, vocab), {Dim::batch()})`.
Tensor sparse_constant(Builder& b, int64_t label, const ir::Dim& vocab,
                       std::vector<ir::Dim> shape = {}, const std::vector<Tensor>& sizes_from = {},
                       std::source_location loc = std::source_location::current());
/// Ints `x` as int32 indices into `dim` (sparse over it): positions computed
/// for nn::gather. Example: `nn::gather(x, nn::as_indices(t + one, time), time)`.
Tensor as_indices(const Tensor& x, const ir::Dim& dim,
                  std::source_location loc = std::source_location::current());
/// Elementwise `cond ? a : b`, broadcasting by dim. Both branches are
/// computed (a select, not a lazy branch). Conditions: a bool tensor, or
/// train_flag(b). In a loop, a masked state update is
/// `loop.next(s, nn::where(mask, updated, s))`.
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b,
             std::source_location loc = std::source_location::current());
/// The lengths of the sequences along the dynamic `axis` of `x`: int32 [B].
Tensor length(const Tensor& x, const ir::Dim& axis,
              std::source_location loc = std::source_location::current());
/// The frames of `x` along the dynamic `axis` where the bool `mask` holds
/// (frames past a sequence's length never count), packed per sequence into
/// the new dynamic `out_axis`, whose lengths are the counts.
Tensor masked_select(const Tensor& x, const Tensor& mask, const ir::Dim& axis,
                     const ir::Dim& out_axis,
                     std::source_location loc = std::source_location::current());
/// The size of the non-batch `dim` of `x` in this batch, an int32 scalar: a
/// static dim's size; a dynamic one's longest sequence (its padded size), as
/// rf.dim_value. Example: `nn::dim_value(x, time)`.
Tensor dim_value(const Tensor& x, const ir::Dim& dim,
                 std::source_location loc = std::source_location::current());
/// A new dynamic dim from computed lengths: `new_dim` gets `lengths` (int32
/// [B], each at least 0) as its sequence lengths; the result is its
/// positions 0, 1, ... (int32 [new_dim], as nn::range_in_axis), from which
/// values over new_dim follow (nn::gather at positions computed from them,
/// via nn::as_indices; constants over it, nn::length). Example: every other frame of x,
/// `nn::gather(x, nn::as_indices(nn::range_of_lengths(half, halves) * two, time), time)`.
Tensor range_of_lengths(const Tensor& lengths, const ir::Dim& new_dim,
                        std::source_location loc = std::source_location::current());
/// masked_select's inverse (unpacking): the frames of `packed` along
/// `packed_axis` put back, in order, at the frames along `axis` where the
/// bool `mask` holds (within the lengths); the other frames are `fill`. The
/// result has the mask's dims, then `packed`'s others.
/// Example: `nn::masked_scatter(f(nn::masked_select(x, m, time, kept)), m, kept, time)`
/// runs f on the kept frames only.
Tensor masked_scatter(const Tensor& packed, const Tensor& mask, const ir::Dim& packed_axis,
                      const ir::Dim& axis, double fill = 0.0,
                      std::source_location loc = std::source_location::current());
/// Each frame of `x` along `axis` repeated `repetitions` times (int32: a
/// scalar, or one count per frame over `axis` and the batch; 0 drops the
/// frame), along the new dynamic `out_axis` (its lengths: the counts'
/// sums within each sequence). Duration-based upsampling, e.g. in TTS.
/// Example: `nn::repeat(phonemes, ph_time, durations, frames)`.
Tensor repeat(const Tensor& x, const ir::Dim& axis, const Tensor& repetitions,
              const ir::Dim& out_axis, std::source_location loc = std::source_location::current());
Tensor repeat(const Tensor& x, const ir::Dim& axis, int64_t repetitions, const ir::Dim& out_axis,
              std::source_location loc = std::source_location::current());
/// Greedy CTC decoding of `logits` over the dynamic `axis` (class dim
/// `classes + blank`, blank last, as nn::ctc_loss takes them): the best class
/// of each frame, repeats collapsed and blanks removed, along the new dynamic
/// `out_axis`; sparse over the logits' class dim (labels below the blank).
Tensor ctc_greedy_decode(const Tensor& logits, const ir::Dim& axis, const ir::Dim& out_axis,
                         std::source_location loc = std::source_location::current());
/// The CTC best path of `logits` (as ctc_greedy_decode: each frame's best
/// class, repeats collapsed, blanks removed) with each label's duration: the
/// frames of its run (int32), both along the new `out_axis`. Example (frame
/// counts per label from a CTC model's own alignment):
/// `auto [labels, frames] = nn::ctc_best_path_durations(logits, time, label_time);`
std::pair<Tensor, Tensor> ctc_best_path_durations(
    const Tensor& logits, const ir::Dim& axis, const ir::Dim& out_axis,
    std::source_location loc = std::source_location::current());
/// `then_fn()` if the scalar bool `pred` holds, else `else_fn()`, computing
/// only the branch taken (RETURNN's `cond` layer; torch: a Python `if`). Each
/// function builds its branch and returns its value; the two values have one
/// type. Example: `nn::cond(nn::train_flag(b), [&] { return noisy(x); }, [&] { return x; })`.
/// Not inside a loop, not nested.
Tensor cond(const Tensor& pred, const std::function<Tensor()>& then_fn,
            const std::function<Tensor()>& else_fn,
            std::source_location loc = std::source_location::current());
/// One-hot float32 vectors of sparse `ids` over their sparse dim.
Tensor one_hot(const Tensor& ids, std::source_location loc = std::source_location::current());

// --- The fused ops the modules are built from (modules.h): each checks its
// operands' dims like the other ops; the modules own the params.

/// An LSTM over `axis`: x [..., in], w [in, 4*out], w_re [out, 4*out],
/// b [4*out] (gates in RETURNN's NativeLstm2 layout); out_dim replaces in.
/// `initial`: the state before the first frame (h0, c0: the output's dims
/// without the axis; default zeros).
Tensor lstm(const Tensor& x, const Tensor& w, const Tensor& w_re, const Tensor& b,
            const ir::Dim& axis, const ir::Dim& out_dim, bool backward = false,
            std::source_location loc = std::source_location::current(), const Tensor* h0 = nullptr,
            const Tensor* c0 = nullptr);
/// The state ("h" or "c") of an nn::lstm result after each sequence's last
/// frame (a backward LSTM's: after the first frame).
Tensor lstm_final_state(const Tensor& lstm_out, const std::string& state,
                        std::source_location loc = std::source_location::current());

/// What fused_self_attention computes (SelfAttention's options less its dims).
struct FusedAttention {
  int64_t num_heads = 1;
  ir::Dim key_dim, value_dim;
  bool causal = false;
  /// > 0: Shaw et al. relative positions from the table `rel_pos`.
  int64_t rel_pos_clipping = 0;
  /// Dropout on the attention weights in training (elementwise).
  double att_dropout = 0.0;
};
/// Multi-head self-attention over the dynamic `axis` with the fused
/// qkv [in, 2*key + value] weight (and a rel_pos [2*clipping + 1, key/heads]
/// table when clipping > 0); value_dim replaces in.
Tensor fused_self_attention(const Tensor& x, const Tensor& qkv, const Tensor* rel_pos,
                            const ir::Dim& axis, const FusedAttention& a,
                            std::source_location loc = std::source_location::current());

/// What conv computes besides its operands.
struct ConvSpec {
  std::vector<ir::Dim> axes, out_axes;
  std::vector<int64_t> strides;
  int64_t dilation = 1;
  std::string padding = "same";
  int64_t groups = 1;
};
/// Convolution of x over `spec.axes` with weight [kernel..., in // groups, out]
/// and bias [out].
Tensor conv(const Tensor& x, const Tensor& weight, const Tensor& bias, const ConvSpec& spec,
            std::source_location loc = std::source_location::current());

/// What transposed_conv computes besides its operands.
struct TransposedConvSpec {
  std::vector<ir::Dim> axes, out_axes;
  std::vector<int64_t> strides;
  std::string padding = "valid";
};
/// Transposed convolution (upsampling; the gradient of a strided conv) of x
/// over `spec.axes` with weight [kernel..., out, in] (RETURNN's layout) and
/// bias [out] (or none). An axis of n frames becomes n * stride frames, plus
/// kernel - stride with "valid" padding (whose kernel must be at least the
/// stride). Frames past a sequence's end are zeroed first.
Tensor transposed_conv(const Tensor& x, const Tensor& weight, const Tensor* bias,
                       const TransposedConvSpec& spec,
                       std::source_location loc = std::source_location::current());
/// The axis after a transposed convolution of `axis` (a new dim; `axis`
/// itself for stride 1 with "same" padding).
ir::Dim transposed_dim(const ir::Dim& axis, int64_t window, int64_t stride,
                       const std::string& padding);

/// `x` with its `axis` replaced by `new_dim`, a dim of `like` whose lengths
/// it takes (as RETURNN's reinterpret_data with size_base): frame t stays
/// frame t, the axis is cut (or zero-padded) to the new dim's extent, and
/// frames past the new lengths count as padding. Example: a transposed
/// convolution back to the targets' frame rate, cut to their lengths:
/// `nn::replace_dim(y, y_time, targets, time)`. (TF: a gather of x's frames
/// at the new dim's positions; torch: rf.replace_dim_v2.)
Tensor replace_dim(const Tensor& x, const ir::Dim& axis, const Tensor& like, const ir::Dim& new_dim,
                   std::source_location loc = std::source_location::current());
/// Not x (bool).
Tensor logical_not(const Tensor& x, std::source_location loc = std::source_location::current());
/// The running sum along `axis`: y[t] = x[0] + ... + x[t].
Tensor cumsum(const Tensor& x, const ir::Dim& axis,
              std::source_location loc = std::source_location::current());
/// The Levenshtein distance (insertions, deletions, substitutions) between
/// the label sequences `a` [B, axis_a] and `b` [B, axis_b], each within its
/// lengths: int32 [B]. Example: a label error rate is
/// `edit_distance(hyps, hyp_time, targets, label_time)` over the targets' lengths.
Tensor edit_distance(const Tensor& a, const ir::Dim& axis_a, const Tensor& b, const ir::Dim& axis_b,
                     std::source_location loc = std::source_location::current());
/// The running logsumexp along `axis`: y[t] = log(exp(x[0]) + ... + exp(x[t]))
/// (floats; stable for any magnitudes). Example: the forward algorithm of a
/// transducer's label axis, `nn::log_cumsum_exp(a - c, labels) + c`.
Tensor log_cumsum_exp(const Tensor& x, const ir::Dim& axis,
                      std::source_location loc = std::source_location::current());
/// The k = |k_dim| largest entries of `x` along the static `axis`, in
/// descending order along the new static `k_dim`, and their indices (int32,
/// sparse over `axis`). Example: `auto [v, i] = nn::top_k(logits, vocab, Dim::feature("k", 4));`
std::pair<Tensor, Tensor> top_k(const Tensor& x, const ir::Dim& axis, const ir::Dim& k_dim,
                                std::source_location loc = std::source_location::current());
/// The k = |k_dim| largest entries of `x` over several static `axes` together
/// (e.g. the hypotheses x the vocab of a beam search), descending along the
/// new `k_dim`, and for each of `axes` (in their order) the index along it of
/// each entry (int32, sparse over that axis, for nn::gather).
/// Example: `auto [v, at] = nn::top_k(scores, {beam, vocab}, k);  // at[0]: the hypothesis`
std::pair<Tensor, std::vector<Tensor>> top_k(
    const Tensor& x, const std::vector<ir::Dim>& axes, const ir::Dim& k_dim,
    std::source_location loc = std::source_location::current());
/// `x` padded along `axis` by `left` and `right` entries of `value` (sparse
/// labels: a label, e.g. BOS before each sequence). A static
/// axis of n entries becomes the static `out_dim` of n + left + right (made
/// here by default); a dynamic one becomes a new dynamic dim whose lengths
/// are the sequence's + left + right, the right padding after each
/// sequence's end.
Tensor pad(const Tensor& x, const ir::Dim& axis, int64_t left, int64_t right, double value = 0.0,
           std::optional<ir::Dim> out_dim = std::nullopt,
           std::source_location loc = std::source_location::current());

/// The tensors (of one type) stacked along the new static `out_dim` (of
/// xs.size() entries; made here by default), the last dim.
Tensor stack(const std::vector<Tensor>& xs, std::optional<ir::Dim> out_dim = std::nullopt,
             std::source_location loc = std::source_location::current());
/// The entries of `x` along its static `axis`, each without that axis.
std::vector<Tensor> unstack(const Tensor& x, const ir::Dim& axis,
                            std::source_location loc = std::source_location::current());
/// Each frame's window of |window_dim| frames along `axis` (the new static
/// `window_dim` right after the axis): "same" padding centers it (frames
/// before the start and past each sequence's end count as 0), "valid" keeps
/// only full windows; every `stride`-th frame (a new axis unless stride 1
/// with "same": windowed_dim's). Example: `nn::window(x, time, Dim::spatial("w", 5))`.
Tensor window(const Tensor& x, const ir::Dim& axis, const ir::Dim& window_dim, int64_t stride = 1,
              std::string padding = "same",
              std::source_location loc = std::source_location::current());

/// The inverse of nn::window: `x` holds the windows (over `axis`, the window
/// dim `window_dim`) that nn::window(like, out_axis, window_dim, stride,
/// padding) made; each frame of `out_axis` becomes the mean of the window
/// entries that hold it (returnn_common's inverse_window with combine "mean").
/// Frames no window holds ("valid" padding's last ones) are 0.
/// Example: `nn::inverse_window(conformer_out, chunks, win, x, time, 25)`.
Tensor inverse_window(const Tensor& x, const ir::Dim& axis, const ir::Dim& window_dim,
                      const Tensor& like, const ir::Dim& out_axis, int64_t stride = 1,
                      const std::string& padding = "same",
                      std::source_location loc = std::source_location::current());
/// A RETURNN TF layer that retc does not know (the escape hatch): `layer` is
/// its dict as JSON, without "from" (retc passes the inputs' layers); a
/// string "$k" in it stands for `layer_dims[k]` (an axis). The value has the
/// declared type (out_dims, dtype, sparse_dim); RETURNN checks the dims the
/// layer makes against out_dims (its out_shape). TF target only: the torch
/// target rejects it at build time. Its layer should have no params of its
/// own (retc does not know them). Example:
/// `nn::raw_layer({x}, {.layer = R"({"class": "activation", "activation": "softsign"})",
///                      .out_dims = x.dims()})`.
struct RawLayer {
  std::string layer;
  std::vector<ir::Dim> layer_dims;
  std::vector<ir::Dim> out_dims;
  ir::DType dtype = ir::DType::kFloat32;
  std::optional<ir::Dim> sparse_dim;
};
Tensor raw_layer(const std::vector<Tensor>& inputs, const RawLayer& spec,
                 std::source_location loc = std::source_location::current());

/// The axis renamed: a static one to another static dim of the same size, a
/// dynamic one to a new dynamic dim with the same lengths (two axes of one
/// length in one tensor: self-attention's keys beside its queries).
Tensor replace_dim(const Tensor& x, const ir::Dim& axis, const ir::Dim& new_dim,
                   std::source_location loc = std::source_location::current());

/// Batch normalization over the feature `axis` with running statistics
/// (updated in training by `momentum`), scale and bias, all [axis]. The batch
/// statistics are over every other axis: `masked`, all frames but padding
/// (RETURNN's masked_time, rf's use_mask=True); else the padded tensor as
/// torch's batch_norm and TF's fused op take it, whose running variance
/// follows the unbiased batch variance (n / (n - 1) times the one that
/// normalizes).
Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& scale, const Tensor& bias, const ir::Dim& axis, double epsilon,
                  double momentum, bool masked = true,
                  std::source_location loc = std::source_location::current());

/// Options of a loss (RETURNN's loss_scale and loss_opts).
struct LossOptions {
  double scale = 1.0;            ///< multiplies the loss in the training objective
  double label_smoothing = 0.0;  ///< cross-entropy only
  /// Cross-entropy only: the focal loss (Lin et al. 2017), each frame's loss
  /// times (1 - p_target)^factor; 0: off. As RETURNN's focal_loss_factor.
  double focal_loss_factor = 0.0;
  /// custom_loss only: report the value as the error (`<set>_error_<name>`)
  /// instead of training on it.
  bool as_error = false;
  /// The objective divides by the number of frames (RETURNN's
  /// use_normalized_loss) instead of summing.
  bool normalize = false;
};

/// Any float value as a loss (RETURNN's "as_is" loss): summed over frames
/// and any other dims; with `as_error`, only reported (marked as
/// "label_error": `retc train` reports it as the label error). Mark the result
/// with mark_as_loss. Example: `nn::custom_loss(nn::reduce(err, "sum", {feat}))`.
Tensor custom_loss(const Tensor& value, LossOptions opts = {},
                   std::source_location loc = std::source_location::current());

/// Per-frame softmax cross-entropy of `logits` against sparse `targets`
/// (class indices whose sparse dim is in the logits). RETURNN also reports
/// the frame error rate of this loss.
Tensor softmax_cross_entropy(const Tensor& logits, const Tensor& targets, LossOptions opts = {},
                             std::source_location loc = std::source_location::current());
/// Connectionist temporal classification of `logits` over the dynamic
/// `axis` against the sparse `targets` (their own, shorter axis). The
/// logits are [batch, axis, class dim] and nothing else (an error at the
/// call otherwise); the class dim must be `classes + blank`, blank a dim of
/// size 1: `Dim out = classes + Dim::feature("blank", 1);`. RETURNN reports the
/// label error rate of the greedy decoding. A sequence whose labels cannot
/// align with its frames (too many for the subsampled length) adds 0 and no
/// gradient, instead of an infinite loss that would stop training.
Tensor ctc_loss(const Tensor& logits, const Tensor& targets, const ir::Dim& axis,
                LossOptions opts = {}, std::source_location loc = std::source_location::current());
/// Per-frame mean over the feature dim of (prediction - target)^2, or of
/// |prediction - target| (mean_absolute_error), against dense target data.
Tensor mean_squared_error(const Tensor& prediction, const Tensor& target, LossOptions opts = {},
                          std::source_location loc = std::source_location::current());
Tensor mean_absolute_error(const Tensor& prediction, const Tensor& target, LossOptions opts = {},
                           std::source_location loc = std::source_location::current());

}  // namespace retc::nn
