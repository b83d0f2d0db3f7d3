// Transformer encoder and decoder layers (pre-norm by default) and their stacks.
#pragma once

#include <functional>
#include <memory>
#include <source_location>
#include <string>

#include "compiler/nn/attention.h"
#include "compiler/nn/layers.h"

namespace retc::nn {

/// Options of the Transformer layers and stacks. Example:
/// `TransformerOptions(model, ff, 8).num_layers(6).dropout(0.1)`; RETURNN
/// frontend's TransformerEncoder/Decoder defaults (rf.encoder.transformer,
/// rf.decoder.transformer):
/// `.att_dropout(0.1).act_dropout(0.1).dropout_broadcast(true).qkv_bias(true).cross_att_fused_kv(true)`.
struct TransformerOptions {
  TransformerOptions(ir::Dim model_dim, ir::Dim ff_dim, int64_t num_heads)
      : model_dim_(model_dim), ff_dim_(ff_dim), num_heads_(num_heads) {}
  RETC_ARG(ir::Dim, model_dim);
  RETC_ARG(ir::Dim, ff_dim);
  RETC_ARG(int64_t, num_heads);
  /// Layers of an encoder or decoder stack (a single layer ignores it).
  RETC_ARG(int64_t, num_layers) = 6;
  /// Of each residual branch.
  RETC_ARG(double, dropout) = 0.1;
  /// On the attention weights (self- and cross-attention).
  RETC_ARG(double, att_dropout) = 0.0;
  /// In the feed-forward block, after the activation.
  RETC_ARG(double, act_dropout) = 0.0;
  /// The dropout masks (dropout, act_dropout) vary along the feature dim
  /// only, shared by every frame and sequence (rf's dropout_broadcast
  /// default); false: elementwise.
  RETC_ARG(bool, dropout_broadcast) = false;
  /// Biases of the attention's input projections (the fused QKV; the
  /// cross-attention's query, key and value).
  RETC_ARG(bool, qkv_bias) = false;
  /// Biases of the attention's output projections.
  RETC_ARG(bool, proj_bias) = true;
  /// Biases of the feed-forward block's two linear layers.
  RETC_ARG(bool, ff_bias) = true;
  /// The feed-forward activation (nn::activation's names: relu, gelu, swish, ...).
  RETC_ARG(std::string, ff_activation) = "relu";
  /// A gated feed-forward block (GLU variants; SwiGLU with
  /// ff_activation("swish"), rf's FeedForwardGated): ff1 [model, 2*ff] gives
  /// a and b, then ff2(act_dropout(ff_activation(a) * b)).
  RETC_ARG(bool, ff_gated) = false;
  /// RmsNorm (a scale, no bias) instead of LayerNorm for every norm of the
  /// layers and stacks (rf's norm=rf.RMSNorm; Llama-style decoders).
  RETC_ARG(bool, rms_norm) = false;
  /// Rotary positions (RoPE) in the self-attention (SelfAttentionOptions::rotary):
  /// a Llama-style decoder adds no positional encoding to its input.
  RETC_ARG(bool, rotary) = false;
  /// Learned relative positions in the self-attention, offsets up to this
  /// clipping (SelfAttentionOptions::rel_pos_clipping, Shaw et al.); 0: none.
  /// In a decoder causal, stepwise too.
  RETC_ARG(int64_t, rel_pos_clipping) = 0;
  /// Pre-norm (each branch normalizes its input) or post-norm (each residual
  /// sum is normalized: Vaswani et al.).
  RETC_ARG(bool, norm_first) = true;
  /// A LayerNorm after the last layer of a stack ("final_norm").
  RETC_ARG(bool, final_norm) = true;
  /// The cross-attention's key and value projections fused into one `kv`
  /// (rf's CrossAttention layout).
  RETC_ARG(bool, cross_att_fused_kv) = false;
};

/// A Transformer encoder layer, pre-norm (the default):
///   h = x + dropout(self_att(ln1(x)));  y = h + dropout(ff(ln2(h)))
/// post-norm (norm_first(false)):
///   h = ln1(x + dropout(self_att(x)));  y = ln2(h + dropout(ff(h)))
/// with ff = ff2(act_dropout(ff_activation(ff1(.)))), ff1 [model, ff] and
/// ff2 [ff, model] (biases unless ff_bias(false); ff_gated: see there).
/// self_att: SelfAttention with att_dropout, qkv_bias and proj_bias. The
/// norms ln1, ln2: LayerNorm, or RmsNorm with rms_norm(true).
class TransformerEncoderLayer : public Module {
 public:
  explicit TransformerEncoderLayer(const TransformerOptions& opts);
  Tensor forward(const Tensor& x, const ir::Dim& axis,
                 std::source_location loc = std::source_location::current()) const;
  std::shared_ptr<Module> ln1, ln2;
  std::shared_ptr<SelfAttention> self_att;
  std::shared_ptr<Linear> ff1, ff2;

 private:
  TransformerOptions opts_;
};

/// `num_layers` TransformerEncoderLayers ("layers.0", ...) and a final
/// LayerNorm (unless final_norm(false)).
class TransformerEncoder : public Module {
 public:
  explicit TransformerEncoder(const TransformerOptions& opts);
  Tensor forward(const Tensor& x, const ir::Dim& axis,
                 std::source_location loc = std::source_location::current()) const;
  std::shared_ptr<ModuleList> layers;
  std::shared_ptr<Module> final_norm;
};

/// A Transformer decoder layer: causal self-attention (ln1), attention over
/// the encoder output (ln2; CrossAttention with att_dropout, qkv_bias,
/// proj_bias, cross_att_fused_kv), feed-forward (ln3), each a residual
/// branch with dropout, pre-norm or post-norm as TransformerEncoderLayer.
class TransformerDecoderLayer : public Module {
 public:
  explicit TransformerDecoderLayer(const TransformerOptions& opts);
  Tensor forward(const Tensor& x, const ir::Dim& axis, const Tensor& memory,
                 const ir::Dim& memory_axis,
                 std::source_location loc = std::source_location::current()) const;
  /// Frame t of forward over the loop's axis: one frame `x` of `loop`, the
  /// self-attention over the frames so far (SelfAttention::step).
  Tensor step(const Tensor& x, Loop& loop, const Tensor& memory, const ir::Dim& memory_axis,
              std::source_location loc = std::source_location::current()) const;
  std::shared_ptr<Module> ln1, ln2, ln3;
  std::shared_ptr<SelfAttention> self_att;
  std::shared_ptr<CrossAttention> cross_att;
  std::shared_ptr<Linear> ff1, ff2;

 private:
  Tensor body(const Tensor& x, const std::function<Tensor(const Tensor&)>& self_attend,
              const Tensor& memory, const ir::Dim& memory_axis, std::source_location loc) const;
  TransformerOptions opts_;
};

/// `num_layers` TransformerDecoderLayers ("layers.0", ...) and a final
/// LayerNorm (unless final_norm(false)).
class TransformerDecoder : public Module {
 public:
  explicit TransformerDecoder(const TransformerOptions& opts);
  Tensor forward(const Tensor& x, const ir::Dim& axis, const Tensor& memory,
                 const ir::Dim& memory_axis,
                 std::source_location loc = std::source_location::current()) const;
  /// Frame t of forward, step by step in `loop` (TransformerDecoderLayer::step).
  Tensor step(const Tensor& x, Loop& loop, const Tensor& memory, const ir::Dim& memory_axis,
              std::source_location loc = std::source_location::current()) const;
  std::shared_ptr<ModuleList> layers;
  std::shared_ptr<Module> final_norm;
};

}  // namespace retc::nn
