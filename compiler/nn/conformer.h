// The Conformer (Gulati et al. 2020) as in returnn_common / ESPnet:
// macaron feed-forward halves around relative-positional self-attention and
// a convolution module, and a convolutional frontend that subsamples time.
#pragma once

#include <memory>
#include <source_location>
#include <string>

#include "compiler/nn/attention.h"
#include "compiler/nn/layers.h"

namespace retc::nn {

/// Options of the Conformer encoder, its blocks and its frontend. Example:
/// `ConformerOptions().num_layers(12).num_heads(8).time_stride(4)`.
struct ConformerOptions {
  /// Blocks of a ConformerEncoder.
  RETC_ARG(int64_t, num_layers) = 12;
  RETC_ARG(int64_t, num_heads) = 4;
  RETC_ARG(int64_t, conv_kernel) = 31;
  RETC_ARG(int64_t, rel_pos_clipping) = 16;
  RETC_ARG(double, dropout) = 0.1;
  /// Dropout on the self-attention weights (SelfAttentionOptions::att_dropout).
  RETC_ARG(double, att_dropout) = 0.0;
  /// The self-attention's output projection has a bias.
  RETC_ARG(bool, att_proj_bias) = true;
  /// The self-attention: Shaw et al.'s learned relative positions
  /// (SelfAttention with rel_pos_clipping, RETURNN's 2021 Conformer) or,
  /// with rel_pos_xl(true), Transformer-XL's (RelPosSelfAttention: rf's
  /// ConformerEncoder default), whose fused QKV has a bias with att_qkv_bias.
  RETC_ARG(bool, rel_pos_xl) = false;
  RETC_ARG(bool, att_qkv_bias) = false;
  /// The feed-forward modules' activation (nn::activation's names; also
  /// relu_square) and whether their linear layers have biases.
  RETC_ARG(std::string, ff_activation) = "swish";
  RETC_ARG(bool, ff_bias) = true;
  /// The convolution module's batch norm: epsilon, a learned scale and bias
  /// (BatchNormOptions::affine), statistics without padding frames (masked;
  /// false: over the padded tensor, as torch's batch_norm).
  RETC_ARG(double, conv_norm_epsilon) = 1e-5;
  RETC_ARG(bool, conv_norm_affine) = true;
  RETC_ARG(bool, conv_norm_masked) = true;
  /// The frontend's final Linear has a bias (rf's input_projection has none).
  RETC_ARG(bool, frontend_linear_bias) = true;
  /// Dropout masks vary along the feature dim only, shared over batch and
  /// time (RETURNN's historical default, rf's `rf_dropout_broadcast`);
  /// false: elementwise, as PyTorch.
  RETC_ARG(bool, dropout_broadcast) = false;
  /// Frontend: channels of its two Conv2d and the time subsampling factor.
  RETC_ARG(int64_t, frontend_channels1) = 32;
  RETC_ARG(int64_t, frontend_channels2) = 64;
  RETC_ARG(int64_t, time_stride) = 2;
  /// Gradient checkpointing of every block (nn::checkpoint): its activations
  /// are computed again in the backward pass instead of kept (torch target).
  RETC_ARG(bool, gradient_checkpoint) = false;
};

/// Linear(model, ff) -> activation (ff_activation, swish) -> dropout ->
/// Linear(ff, model) (biases unless ff_bias(false); dropout and its masks
/// from the options).
class ConformerFeedForward : public Module {
 public:
  ConformerFeedForward(ir::Dim model_dim, ir::Dim ff_dim, const ConformerOptions& opts = {});
  Tensor forward(const Tensor& x, std::source_location loc = std::source_location::current()) const;
  std::shared_ptr<Linear> linear_ff, linear_out;

 private:
  double dropout_;
  bool dropout_broadcast_;
  std::string activation_;
};

/// Pointwise Linear(model, 2*model) -> GLU -> depthwise Conv1d (kernel,
/// groups = model) -> BatchNorm -> swish -> pointwise Linear(model, model).
class ConformerConvModule : public Module {
 public:
  ConformerConvModule(ir::Dim model_dim, int64_t kernel_size, double norm_epsilon = 1e-5);
  ConformerConvModule(ir::Dim model_dim, int64_t kernel_size, const BatchNormOptions& norm);
  Tensor forward(const Tensor& x, const ir::Dim& axis,
                 std::source_location loc = std::source_location::current()) const;
  std::shared_ptr<Linear> pointwise_conv1, pointwise_conv2;
  std::shared_ptr<Conv1d> depthwise_conv;
  std::shared_ptr<BatchNorm> norm;

 private:
  ir::Dim model_dim_, glu_dim_;
};

/// One block:  x += ½·ff1(ln(x));  x += mhsa(ln(x));  x += conv(ln(x));
/// x += ½·ff2(ln(x));  y = ln(x)   (each branch with dropout). mhsa is
/// self_att, or rel_pos_att with rel_pos_xl(true) (its params under
/// "self_att" too).
class ConformerBlock : public Module {
 public:
  ConformerBlock(ir::Dim model_dim, ir::Dim ff_dim, const ConformerOptions& opts);
  Tensor forward(const Tensor& x, const ir::Dim& axis,
                 std::source_location loc = std::source_location::current()) const;
  std::shared_ptr<LayerNorm> ff1_norm, att_norm, conv_norm, ff2_norm, final_norm;
  std::shared_ptr<ConformerFeedForward> ff1, ff2;
  std::shared_ptr<SelfAttention> self_att;
  std::shared_ptr<RelPosSelfAttention> rel_pos_att;
  std::shared_ptr<ConformerConvModule> conv;

 private:
  double dropout_;
  bool dropout_broadcast_;
};

/// VGG-style frontend: the features become a spatial axis with one channel;
/// Conv2d 3x3 (frontend_channels1) -> swish -> max pool 1x2 over features ->
/// Conv2d 3x3 (frontend_channels2) with time stride `time_stride` -> swish ->
/// merge features and channels -> Linear to the model dim. out_axis(time) is
/// the new time.
class ConformerFrontend : public Module {
 public:
  ConformerFrontend(ir::Dim in_dim, ir::Dim model_dim, const ConformerOptions& opts = {});
  Tensor forward(const Tensor& x, const ir::Dim& time,
                 std::source_location loc = std::source_location::current()) const;
  ir::Dim out_axis(const ir::Dim& time) const { return conv2->out_axis(time, 0); }
  std::shared_ptr<Conv2d> conv1, conv2;
  std::shared_ptr<Linear> linear;

 private:
  ir::Dim in_dim_, feat_, chan0_, pooled_, merged_;
};

/// Frontend -> dropout -> `num_layers` ConformerBlocks ("layers.0", ...).
class ConformerEncoder : public Module {
 public:
  ConformerEncoder(ir::Dim in_dim, ir::Dim model_dim, ir::Dim ff_dim,
                   const ConformerOptions& opts = {});
  /// The encoder output over out_axis(time).
  Tensor forward(const Tensor& x, const ir::Dim& time,
                 std::source_location loc = std::source_location::current()) const;
  ir::Dim out_axis(const ir::Dim& time) const { return frontend->out_axis(time); }
  std::shared_ptr<ConformerFrontend> frontend;
  std::shared_ptr<ModuleList> layers;

 private:
  double dropout_;
  bool dropout_broadcast_;
};

}  // namespace retc::nn
