// The Conformer (Gulati et al. 2020) as in returnn_common / ESPnet:
// macaron feed-forward halves around relative-positional self-attention and
// a convolution module, and a convolutional frontend that subsamples time.
#pragma once

#include <memory>
#include <optional>
#include <source_location>
#include <string>
#include <vector>

#include "compiler/nn/attention.h"
#include "compiler/nn/layers.h"

namespace retc::nn {

/// Options of the Conformer encoder, its blocks and its frontend. Example:
/// `ConformerOptions().num_layers(12).num_heads(8).time_stride(4)`.
struct ConformerOptions {
  /// Blocks of a ConformerEncoder.
  RETC_ARG(int64_t, num_layers) = 12;
  /// The E-Branchformer's merge convolution kernel (EBranchformerBlock).
  RETC_ARG(int64_t, merge_kernel) = 3;
  RETC_ARG(int64_t, num_heads) = 4;
  RETC_ARG(int64_t, conv_kernel) = 31;
  RETC_ARG(int64_t, rel_pos_clipping) = 16;
  /// Dropout on the relative positions in training: Shaw's learned table
  /// (SelfAttentionOptions::rel_pos_dropout) or, with rel_pos_xl, the
  /// sinusoidal encodings (RelPosSelfAttentionOptions::rel_pos_dropout).
  RETC_ARG(double, rel_pos_dropout) = 0.0;
  RETC_ARG(double, dropout) = 0.1;
  /// A block's modules in order, each a residual branch after its own layer
  /// norm: "ff" (ConformerFeedForward), "mhsa" (self-attention), "conv"
  /// (ConformerConvModule). Default: the macaron Conformer {"ff", "mhsa",
  /// "conv", "ff"}; e.g. {"mhsa", "conv", "ff"}: without the macaron's first
  /// feed-forward; {"ff", "conv", "mhsa", "ff"}: convolution first.
  RETC_ARG(std::vector<std::string>, block_modules) = {"ff", "mhsa", "conv", "ff"};
  /// The residual scale of each module (x += scale * module(ln(x))), one per
  /// block_modules entry (i6_models' ConformerBlockV2 `scales`). Empty (the
  /// default): 0.5 for each "ff" of a block with two or more (macaron), else 1.
  RETC_ARG(std::vector<double>, block_scales);
  /// Dropout of each module kind (its output, and the feed-forward's hidden
  /// activations); unset: `dropout`.
  RETC_ARG(std::optional<double>, ff_dropout);
  RETC_ARG(std::optional<double>, mhsa_dropout);
  RETC_ARG(std::optional<double>, conv_dropout);
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
  /// The convolution module's batch norm: epsilon, the running statistics'
  /// momentum in training (BatchNormOptions::momentum), a learned scale and bias
  /// (BatchNormOptions::affine), statistics without padding frames (masked;
  /// false: over the padded tensor, as torch's batch_norm).
  RETC_ARG(double, conv_norm_epsilon) = 1e-5;
  RETC_ARG(double, conv_norm_momentum) = 0.1;
  RETC_ARG(bool, conv_norm_affine) = true;
  RETC_ARG(bool, conv_norm_masked) = true;
  /// The frontend's final Linear has a bias (rf's input_projection has none).
  RETC_ARG(bool, frontend_linear_bias) = true;
  /// Dropout masks vary along the feature dim only, shared over batch and
  /// time (RETURNN's historical default, rf's `rf_dropout_broadcast`);
  /// false: elementwise, as PyTorch.
  RETC_ARG(bool, dropout_broadcast) = false;
  /// The frontend (ConformerFrontend): "vgg" (two Conv2d and a max pool over
  /// the features, RETURNN's 2021 Conformer; rf's ConformerConvSubsample),
  /// "conv1d" (one Conv1d over time from the features to the model dim,
  /// kernel frontend_kernel, stride time_stride, then swish: i6_models'
  /// WindowConvolutionFrontendV1), "linear" (a Linear to the model dim, no
  /// subsampling: the input already subsampled, or a Conformer on top of
  /// another encoder).
  RETC_ARG(std::string, frontend) = "vgg";
  RETC_ARG(int64_t, frontend_kernel) = 5;
  /// "vgg" frontend: channels of its two Conv2d; time_stride: the time
  /// subsampling factor ("vgg" and "conv1d").
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

/// One block: each module of block_modules as a residual branch after its
/// own layer norm, x += scale·dropout(module(ln(x))), then y = ln(x). The
/// default (macaron): x += ½·ff1(ln(x)); x += mhsa(ln(x)); x += conv(ln(x));
/// x += ½·ff2(ln(x)); y = ln(x). Params: the feed-forward modules ff1, ff2,
/// ... (their norms ff1_norm, ...), the self-attention self_att (norm
/// att_norm; a second one self_att2, att2_norm), the convolution module conv
/// (conv_norm; conv2, conv2_norm), final_norm. mhsa is SelfAttention, or
/// RelPosSelfAttention with rel_pos_xl(true) (also named "self_att").
class ConformerBlock : public Module {
 public:
  ConformerBlock(ir::Dim model_dim, ir::Dim ff_dim, const ConformerOptions& opts);
  Tensor forward(const Tensor& x, const ir::Dim& axis,
                 std::source_location loc = std::source_location::current()) const;
  /// The default block's modules (null where block_modules has none).
  std::shared_ptr<LayerNorm> ff1_norm, att_norm, conv_norm, ff2_norm, final_norm;
  std::shared_ptr<ConformerFeedForward> ff1, ff2;
  std::shared_ptr<SelfAttention> self_att;
  std::shared_ptr<RelPosSelfAttention> rel_pos_att;
  std::shared_ptr<ConformerConvModule> conv;

 private:
  struct Branch {
    std::shared_ptr<LayerNorm> norm;
    std::shared_ptr<ConformerFeedForward> ff;
    std::shared_ptr<SelfAttention> att;
    std::shared_ptr<RelPosSelfAttention> rel_pos_att;
    std::shared_ptr<ConformerConvModule> conv;
    double scale, dropout;
  };
  std::vector<Branch> branches_;
  bool dropout_broadcast_;
};

/// E-Branchformer's convolutional gating MLP (cgMLP; Kim et al. 2022, rf's
/// FeedForwardConvGated): Linear(model, 2*ff) -> gelu -> split into halves g
/// and r; g = depthwise Conv1d(LayerNorm(g)) (kernel, groups = ff, "same");
/// g·r -> dropout -> Linear(ff, model). Params: linear_ff, norm, conv,
/// linear_out.
class ConvGatedFeedForward : public Module {
 public:
  ConvGatedFeedForward(ir::Dim model_dim, ir::Dim ff_dim, int64_t kernel_size,
                       const ConformerOptions& opts = {});
  Tensor forward(const Tensor& x, const ir::Dim& axis,
                 std::source_location loc = std::source_location::current()) const;
  std::shared_ptr<Linear> linear_ff, linear_out;
  std::shared_ptr<LayerNorm> norm;
  std::shared_ptr<Conv1d> conv;

 private:
  ir::Dim ff_dim_, gated_dim_;
  double dropout_;
  bool dropout_broadcast_;
};

/// E-Branchformer's merge of its two branches (rf's Merge): c = concat(a, b)
/// over their feature dims; Linear(2*model, model)(c + depthwise Conv1d(c))
/// (kernel merge_kernel, "same"). Params: depthwise_conv, proj.
class BranchMerge : public Module {
 public:
  BranchMerge(ir::Dim model_dim, int64_t kernel_size);
  Tensor forward(const Tensor& a, const Tensor& b, const ir::Dim& axis,
                 std::source_location loc = std::source_location::current()) const;
  std::shared_ptr<Conv1d> depthwise_conv;
  std::shared_ptr<Linear> proj;

 private:
  ir::Dim model_dim_, concat_dim_;
};

/// One E-Branchformer block (Kim et al. 2022; rf's EBranchformerLayer,
/// param for param): x += ½·dropout(ff1(ln(x)));  a = dropout(mhsa(ln(x)));
/// b = dropout(cgmlp(ln(x)));  x += dropout(merge(a, b));
/// x += ½·dropout(ff2(ln(x)));  y = ln(x). mhsa as ConformerBlock's (rf's
/// default: rel_pos_xl(true) with att_qkv_bias(true)); cgmlp's kernel is
/// conv_kernel, the merge's merge_kernel. Params: ff1_norm, ff1, att_norm,
/// self_att, cgmlp_norm, cgmlp, merge, ff2_norm, ff2, final_norm.
class EBranchformerBlock : public Module {
 public:
  EBranchformerBlock(ir::Dim model_dim, ir::Dim ff_dim, ir::Dim cgmlp_dim,
                     const ConformerOptions& opts);
  Tensor forward(const Tensor& x, const ir::Dim& axis,
                 std::source_location loc = std::source_location::current()) const;
  std::shared_ptr<LayerNorm> ff1_norm, att_norm, cgmlp_norm, ff2_norm, final_norm;
  std::shared_ptr<ConformerFeedForward> ff1, ff2;
  std::shared_ptr<SelfAttention> self_att;
  std::shared_ptr<RelPosSelfAttention> rel_pos_att;
  std::shared_ptr<ConvGatedFeedForward> cgmlp;
  std::shared_ptr<BranchMerge> merge;

 private:
  double dropout_;
  bool dropout_broadcast_;
};

/// The frontend of ConformerOptions::frontend. "vgg": the features become a
/// spatial axis with one channel; Conv2d 3x3 (frontend_channels1) -> swish ->
/// max pool 1x2 over features -> Conv2d 3x3 (frontend_channels2) with time
/// stride `time_stride` -> swish -> merge features and channels -> Linear to
/// the model dim (params conv1, conv2, linear). "conv1d": Conv1d(in, model,
/// frontend_kernel) with stride time_stride -> swish (param conv). "linear":
/// Linear(in, model) (param linear). out_axis(time) is the new time.
class ConformerFrontend : public Module {
 public:
  ConformerFrontend(ir::Dim in_dim, ir::Dim model_dim, const ConformerOptions& opts = {});
  Tensor forward(const Tensor& x, const ir::Dim& time,
                 std::source_location loc = std::source_location::current()) const;
  ir::Dim out_axis(const ir::Dim& time) const;
  std::shared_ptr<Conv2d> conv1, conv2;
  std::shared_ptr<Conv1d> conv;
  std::shared_ptr<Linear> linear;

 private:
  ir::Dim in_dim_, feat_, chan0_, pooled_, merged_;
};

/// Frontend -> dropout -> `num_layers` ConformerBlocks ("layers.0", ...),
/// or with a cgmlp_dim, EBranchformerBlocks (rf's ConformerEncoder with
/// encoder_layer EBranchformerLayer; cgmlp_dim is rf's cgmlp_ff_dim).
class ConformerEncoder : public Module {
 public:
  ConformerEncoder(ir::Dim in_dim, ir::Dim model_dim, ir::Dim ff_dim,
                   const ConformerOptions& opts = {},
                   std::optional<ir::Dim> cgmlp_dim = std::nullopt);
  /// The encoder output over out_axis(time).
  Tensor forward(const Tensor& x, const ir::Dim& time,
                 std::source_location loc = std::source_location::current()) const;
  ir::Dim out_axis(const ir::Dim& time) const { return frontend->out_axis(time); }
  std::shared_ptr<ConformerFrontend> frontend;
  std::shared_ptr<ModuleList> layers;

 private:
  double dropout_;
  bool dropout_broadcast_;
  bool e_branchformer_;
};

}  // namespace retc::nn
