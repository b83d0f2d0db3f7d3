// Pre-norm Transformer encoder and decoder layers and their stacks.
#pragma once

#include <functional>
#include <memory>
#include <source_location>

#include "compiler/nn/attention.h"
#include "compiler/nn/layers.h"

namespace retc::nn {

/// Options of the Transformer layers and stacks. Example:
/// `TransformerOptions(model, ff, 8).num_layers(6).dropout(0.1)`.
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
};

/// A pre-norm Transformer encoder layer:
///   h = x + dropout(self_att(ln1(x)));  y = h + dropout(ff2(relu(ff1(ln2(h)))))
class TransformerEncoderLayer : public Module {
 public:
  explicit TransformerEncoderLayer(const TransformerOptions& opts);
  Tensor forward(const Tensor& x, const ir::Dim& axis,
                 std::source_location loc = std::source_location::current()) const;
  std::shared_ptr<LayerNorm> ln1, ln2;
  std::shared_ptr<SelfAttention> self_att;
  std::shared_ptr<Linear> ff1, ff2;

 private:
  double dropout_;
};

/// `num_layers` TransformerEncoderLayers ("layers.0", ...) and a final LayerNorm.
class TransformerEncoder : public Module {
 public:
  explicit TransformerEncoder(const TransformerOptions& opts);
  Tensor forward(const Tensor& x, const ir::Dim& axis,
                 std::source_location loc = std::source_location::current()) const;
  std::shared_ptr<ModuleList> layers;
  std::shared_ptr<LayerNorm> final_norm;
};

/// A pre-norm Transformer decoder layer: causal self-attention, attention
/// over the encoder output, feed-forward, each residual with dropout.
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
  std::shared_ptr<LayerNorm> ln1, ln2, ln3;
  std::shared_ptr<SelfAttention> self_att;
  std::shared_ptr<CrossAttention> cross_att;
  std::shared_ptr<Linear> ff1, ff2;

 private:
  Tensor body(const Tensor& x, const std::function<Tensor(const Tensor&)>& self_attend,
              const Tensor& memory, const ir::Dim& memory_axis, std::source_location loc) const;
  double dropout_;
};

/// `num_layers` TransformerDecoderLayers ("layers.0", ...) and a final LayerNorm.
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
  std::shared_ptr<LayerNorm> final_norm;
};

}  // namespace retc::nn
