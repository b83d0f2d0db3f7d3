#include "compiler/nn/transformer.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "compiler/nn/builder.h"

namespace retc::nn {
namespace {

// A dropout rate in [0, 1) and an activation nn::activation knows, else the
// layer is rejected at the user's line.
void check_options(Module& m, const TransformerOptions& o) {
  for (auto [name, rate] : {std::pair<const char*, double>{"dropout", o.dropout()},
                            {"att_dropout", o.att_dropout()},
                            {"act_dropout", o.act_dropout()}}) {
    if (!(rate >= 0 && rate < 1))
      m.reject(absl::StrCat(m.describe(), ": ", name, " must be in [0, 1), got ", rate));
  }
  if (!is_named_activation(o.ff_activation())) {
    m.reject(absl::StrCat(m.describe(), ": ff_activation \"", o.ff_activation(),
                          "\" is not an activation (nn::activation's or relu_square)"));
  }
}

// Dropout of a residual branch or of the feed-forward activation, on `dim`
// only with dropout_broadcast (rf's default), else elementwise.
Tensor layer_dropout(const Tensor& x, double rate, const ir::Dim& dim, const TransformerOptions& o,
                     std::source_location loc) {
  if (rate == 0.0) return x;
  return dropout(x, rate,
                 o.dropout_broadcast() ? std::vector<ir::Dim>{dim} : std::vector<ir::Dim>{}, loc);
}

// ff2(act_dropout(activation(ff1(x)))).
Tensor feed_forward(const Linear& ff1, const Linear& ff2, const TransformerOptions& o,
                    const Tensor& x, std::source_location loc) {
  Tensor h = named_activation(ff1.forward(x, loc), o.ff_activation(), loc);
  return ff2.forward(layer_dropout(h, o.act_dropout(), ff1.out_dim(), o, loc), loc);
}

// A residual branch: pre-norm x + dropout(f(norm(x))), post-norm
// norm(x + dropout(f(x))).
Tensor residual(const Tensor& x, const LayerNorm& norm, const TransformerOptions& o,
                const std::function<Tensor(const Tensor&)>& f, std::source_location loc) {
  if (o.norm_first())
    return add(x, layer_dropout(f(norm.forward(x, loc)), o.dropout(), o.model_dim(), o, loc), loc);
  return norm.forward(add(x, layer_dropout(f(x), o.dropout(), o.model_dim(), o, loc), loc), loc);
}

SelfAttentionOptions self_attention_options(const TransformerOptions& o) {
  return SelfAttentionOptions(o.model_dim(), o.model_dim(), o.model_dim(), o.num_heads())
      .att_dropout(o.att_dropout())
      .qkv_bias(o.qkv_bias())
      .proj_bias(o.proj_bias());
}

}  // namespace

TransformerEncoderLayer::TransformerEncoderLayer(const TransformerOptions& o)
    : Module("transformer_encoder_layer"), opts_(o) {
  check_options(*this, o);
  const ir::Dim& model_dim = o.model_dim();
  const ir::Dim& ff_dim = o.ff_dim();
  ln1 = register_module("ln1", std::make_shared<LayerNorm>(model_dim));
  self_att =
      register_module("self_att", std::make_shared<SelfAttention>(self_attention_options(o)));
  ln2 = register_module("ln2", std::make_shared<LayerNorm>(model_dim));
  ff1 = register_module("ff1", std::make_shared<Linear>(model_dim, ff_dim, o.ff_bias()));
  ff2 = register_module("ff2", std::make_shared<Linear>(ff_dim, model_dim, o.ff_bias()));
}

Tensor TransformerEncoderLayer::forward(const Tensor& input, const ir::Dim& axis,
                                        std::source_location loc) const {
  return call(input, loc, [&](const Tensor& x) {
    Tensor h = residual(
        x, *ln1, opts_, [&](const Tensor& y) { return self_att->forward(y, axis, loc); }, loc);
    return residual(
        h, *ln2, opts_, [&](const Tensor& y) { return feed_forward(*ff1, *ff2, opts_, y, loc); },
        loc);
  });
}

namespace {

// `n` Transformer layers of one kind in a ModuleList.
template <class Layer>
std::shared_ptr<ModuleList> layer_stack(const TransformerOptions& o) {
  auto list = std::make_shared<ModuleList>();
  for (int64_t i = 0; i < o.num_layers(); ++i) list->append(std::make_shared<Layer>(o));
  return list;
}

}  // namespace

TransformerEncoder::TransformerEncoder(const TransformerOptions& o)
    : Module("transformer_encoder") {
  layers = register_module("layers", layer_stack<TransformerEncoderLayer>(o));
  if (o.final_norm())
    final_norm = register_module("final_norm", std::make_shared<LayerNorm>(o.model_dim()));
}

Tensor TransformerEncoder::forward(const Tensor& input, const ir::Dim& axis,
                                   std::source_location loc) const {
  return call(input, loc, [&](const Tensor& x) {
    Tensor h = x;
    for (size_t i = 0; i < layers->size(); ++i)
      h = layers->at<TransformerEncoderLayer>(i)->forward(h, axis, loc);
    return final_norm ? final_norm->forward(h, loc) : h;
  });
}

TransformerDecoderLayer::TransformerDecoderLayer(const TransformerOptions& o)
    : Module("transformer_decoder_layer"), opts_(o) {
  check_options(*this, o);
  const ir::Dim& model_dim = o.model_dim();
  const ir::Dim& ff_dim = o.ff_dim();
  ln1 = register_module("ln1", std::make_shared<LayerNorm>(model_dim));
  self_att = register_module(
      "self_att", std::make_shared<SelfAttention>(self_attention_options(o).causal(true)));
  ln2 = register_module("ln2", std::make_shared<LayerNorm>(model_dim));
  cross_att = register_module(
      "cross_att",
      std::make_shared<CrossAttention>(
          CrossAttentionOptions(model_dim, model_dim, model_dim, model_dim, o.num_heads())
              .att_dropout(o.att_dropout())
              .qkv_bias(o.qkv_bias())
              .proj_bias(o.proj_bias())
              .fused_kv(o.cross_att_fused_kv())));
  ln3 = register_module("ln3", std::make_shared<LayerNorm>(model_dim));
  ff1 = register_module("ff1", std::make_shared<Linear>(model_dim, ff_dim, o.ff_bias()));
  ff2 = register_module("ff2", std::make_shared<Linear>(ff_dim, model_dim, o.ff_bias()));
}

Tensor TransformerDecoderLayer::forward(const Tensor& input, const ir::Dim& axis,
                                        const Tensor& memory, const ir::Dim& memory_axis,
                                        std::source_location loc) const {
  return body(
      input, [&](const Tensor& y) { return self_att->forward(y, axis, loc); }, memory, memory_axis,
      loc);
}

Tensor TransformerDecoderLayer::step(const Tensor& input, Loop& loop, const Tensor& memory,
                                     const ir::Dim& memory_axis, std::source_location loc) const {
  return body(
      input, [&](const Tensor& y) { return self_att->step(y, loop, loc); }, memory, memory_axis,
      loc);
}

Tensor TransformerDecoderLayer::body(const Tensor& input,
                                     const std::function<Tensor(const Tensor&)>& self_attend,
                                     const Tensor& memory, const ir::Dim& memory_axis,
                                     std::source_location loc) const {
  return call(input, loc, [&](const Tensor& x) {
    Tensor h = residual(x, *ln1, opts_, self_attend, loc);
    h = residual(
        h, *ln2, opts_,
        [&](const Tensor& y) { return cross_att->forward(y, memory, memory_axis, loc); }, loc);
    return residual(
        h, *ln3, opts_, [&](const Tensor& y) { return feed_forward(*ff1, *ff2, opts_, y, loc); },
        loc);
  });
}

TransformerDecoder::TransformerDecoder(const TransformerOptions& o)
    : Module("transformer_decoder") {
  layers = register_module("layers", layer_stack<TransformerDecoderLayer>(o));
  if (o.final_norm())
    final_norm = register_module("final_norm", std::make_shared<LayerNorm>(o.model_dim()));
}

Tensor TransformerDecoder::forward(const Tensor& input, const ir::Dim& axis, const Tensor& memory,
                                   const ir::Dim& memory_axis, std::source_location loc) const {
  return call(input, loc, [&](const Tensor& x) {
    Tensor h = x;
    for (size_t i = 0; i < layers->size(); ++i)
      h = layers->at<TransformerDecoderLayer>(i)->forward(h, axis, memory, memory_axis, loc);
    return final_norm ? final_norm->forward(h, loc) : h;
  });
}

Tensor TransformerDecoder::step(const Tensor& input, Loop& loop, const Tensor& memory,
                                const ir::Dim& memory_axis, std::source_location loc) const {
  return call(input, loc, [&](const Tensor& x) {
    Tensor h = x;
    for (size_t i = 0; i < layers->size(); ++i)
      h = layers->at<TransformerDecoderLayer>(i)->step(h, loop, memory, memory_axis, loc);
    return final_norm ? final_norm->forward(h, loc) : h;
  });
}

}  // namespace retc::nn
