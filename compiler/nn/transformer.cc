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

// ff2(act_dropout(activation(ff1(x)))); gated: ff1(x) split into a and b,
// ff2(act_dropout(activation(a) * b)).
Tensor feed_forward(const Linear& ff1, const Linear& ff2, const TransformerOptions& o,
                    const Tensor& x, std::source_location loc) {
  Tensor h = ff1.forward(x, loc);
  if (o.ff_gated()) {
    const ir::Dim& ff = ff2.in_dim();
    const ir::Dim gate = ir::Dim::feature("gate", *ff.size());
    std::vector<Tensor> ab = split(h, ff1.out_dim(), {ff, gate}, loc);
    h = mul(named_activation(ab[0], o.ff_activation(), loc), replace_dim(ab[1], gate, ff, loc),
            loc);
  } else {
    h = named_activation(h, o.ff_activation(), loc);
  }
  return ff2.forward(layer_dropout(h, o.act_dropout(), ff2.in_dim(), o, loc), loc);
}

// The norm of a layer or a stack: LayerNorm, or RmsNorm with rms_norm.
std::shared_ptr<Module> make_norm(const TransformerOptions& o) {
  if (o.rms_norm()) return std::make_shared<RmsNorm>(o.model_dim());
  return std::make_shared<LayerNorm>(o.model_dim());
}

Tensor apply_norm(const Module& norm, const Tensor& x, std::source_location loc) {
  if (const auto* rms = dynamic_cast<const RmsNorm*>(&norm)) return rms->forward(x, loc);
  return static_cast<const LayerNorm&>(norm).forward(x, loc);
}

// A residual branch: pre-norm x + dropout(f(norm(x))), post-norm
// norm(x + dropout(f(x))).
Tensor residual(const Tensor& x, const Module& norm, const TransformerOptions& o,
                const std::function<Tensor(const Tensor&)>& f, std::source_location loc) {
  if (o.norm_first())
    return add(x, layer_dropout(f(apply_norm(norm, x, loc)), o.dropout(), o.model_dim(), o, loc),
               loc);
  return apply_norm(norm, add(x, layer_dropout(f(x), o.dropout(), o.model_dim(), o, loc), loc),
                    loc);
}

SelfAttentionOptions self_attention_options(const TransformerOptions& o) {
  return SelfAttentionOptions(o.model_dim(), o.model_dim(), o.model_dim(), o.num_heads())
      .att_dropout(o.att_dropout())
      .qkv_bias(o.qkv_bias())
      .rotary(o.rotary())
      .rel_pos_clipping(o.rel_pos_clipping())
      .proj_bias(o.proj_bias());
}

}  // namespace

TransformerEncoderLayer::TransformerEncoderLayer(const TransformerOptions& o)
    : Module("transformer_encoder_layer"), opts_(o) {
  check_options(*this, o);
  const ir::Dim& model_dim = o.model_dim();
  const ir::Dim& ff_dim = o.ff_dim();
  ln1 = register_module("ln1", make_norm(o));
  self_att =
      register_module("self_att", std::make_shared<SelfAttention>(self_attention_options(o)));
  ln2 = register_module("ln2", make_norm(o));
  ff1 = register_module(
      "ff1", std::make_shared<Linear>(model_dim, o.ff_gated() ? 2 * ff_dim : ff_dim, o.ff_bias()));
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
  if (o.final_norm()) final_norm = register_module("final_norm", make_norm(o));
}

Tensor TransformerEncoder::forward(const Tensor& input, const ir::Dim& axis,
                                   std::source_location loc) const {
  return call(input, loc, [&](const Tensor& x) {
    Tensor h = x;
    for (size_t i = 0; i < layers->size(); ++i)
      h = layers->at<TransformerEncoderLayer>(i)->forward(h, axis, loc);
    return final_norm ? apply_norm(*final_norm, h, loc) : h;
  });
}

TransformerDecoderLayer::TransformerDecoderLayer(const TransformerOptions& o)
    : Module("transformer_decoder_layer"), opts_(o) {
  check_options(*this, o);
  const ir::Dim& model_dim = o.model_dim();
  const ir::Dim& ff_dim = o.ff_dim();
  ln1 = register_module("ln1", make_norm(o));
  self_att = register_module(
      "self_att", std::make_shared<SelfAttention>(self_attention_options(o).causal(true)));
  ln2 = register_module("ln2", make_norm(o));
  cross_att = register_module(
      "cross_att",
      std::make_shared<CrossAttention>(
          CrossAttentionOptions(model_dim, model_dim, model_dim, model_dim, o.num_heads())
              .att_dropout(o.att_dropout())
              .qkv_bias(o.qkv_bias())
              .proj_bias(o.proj_bias())
              .fused_kv(o.cross_att_fused_kv())));
  ln3 = register_module("ln3", make_norm(o));
  ff1 = register_module(
      "ff1", std::make_shared<Linear>(model_dim, o.ff_gated() ? 2 * ff_dim : ff_dim, o.ff_bias()));
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
  if (o.final_norm()) final_norm = register_module("final_norm", make_norm(o));
}

Tensor TransformerDecoder::forward(const Tensor& input, const ir::Dim& axis, const Tensor& memory,
                                   const ir::Dim& memory_axis, std::source_location loc) const {
  return call(input, loc, [&](const Tensor& x) {
    Tensor h = x;
    for (size_t i = 0; i < layers->size(); ++i)
      h = layers->at<TransformerDecoderLayer>(i)->forward(h, axis, memory, memory_axis, loc);
    return final_norm ? apply_norm(*final_norm, h, loc) : h;
  });
}

Tensor TransformerDecoder::step(const Tensor& input, Loop& loop, const Tensor& memory,
                                const ir::Dim& memory_axis, std::source_location loc) const {
  return call(input, loc, [&](const Tensor& x) {
    Tensor h = x;
    for (size_t i = 0; i < layers->size(); ++i)
      h = layers->at<TransformerDecoderLayer>(i)->step(h, loop, memory, memory_axis, loc);
    return final_norm ? apply_norm(*final_norm, h, loc) : h;
  });
}

}  // namespace retc::nn
