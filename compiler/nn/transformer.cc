#include "compiler/nn/transformer.h"

#include "compiler/nn/builder.h"

namespace retc::nn {

TransformerEncoderLayer::TransformerEncoderLayer(const TransformerOptions& o)
    : Module("transformer_encoder_layer"), dropout_(o.dropout()) {
  const ir::Dim& model_dim = o.model_dim();
  const ir::Dim& ff_dim = o.ff_dim();
  ln1 = register_module("ln1", std::make_shared<LayerNorm>(model_dim));
  self_att = register_module("self_att", std::make_shared<SelfAttention>(SelfAttentionOptions(
                                             model_dim, model_dim, model_dim, o.num_heads())));
  ln2 = register_module("ln2", std::make_shared<LayerNorm>(model_dim));
  ff1 = register_module("ff1", std::make_shared<Linear>(model_dim, ff_dim));
  ff2 = register_module("ff2", std::make_shared<Linear>(ff_dim, model_dim));
}

Tensor TransformerEncoderLayer::forward(const Tensor& input, const ir::Dim& axis,
                                        std::source_location loc) const {
  return call(input, loc, [&](const Tensor& x) {
    Tensor h =
        add(x, dropout(self_att->forward(ln1->forward(x, loc), axis, loc), dropout_, {}, loc), loc);
    Tensor ff = ff2->forward(relu(ff1->forward(ln2->forward(h, loc), loc), loc), loc);
    return add(h, dropout(ff, dropout_, {}, loc), loc);
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
  final_norm = register_module("final_norm", std::make_shared<LayerNorm>(o.model_dim()));
}

Tensor TransformerEncoder::forward(const Tensor& input, const ir::Dim& axis,
                                   std::source_location loc) const {
  return call(input, loc, [&](const Tensor& x) {
    Tensor h = x;
    for (size_t i = 0; i < layers->size(); ++i)
      h = layers->at<TransformerEncoderLayer>(i)->forward(h, axis, loc);
    return final_norm->forward(h, loc);
  });
}

TransformerDecoderLayer::TransformerDecoderLayer(const TransformerOptions& o)
    : Module("transformer_decoder_layer"), dropout_(o.dropout()) {
  const ir::Dim& model_dim = o.model_dim();
  const ir::Dim& ff_dim = o.ff_dim();
  const int64_t num_heads = o.num_heads();
  ln1 = register_module("ln1", std::make_shared<LayerNorm>(model_dim));
  self_att = register_module(
      "self_att",
      std::make_shared<SelfAttention>(
          SelfAttentionOptions(model_dim, model_dim, model_dim, num_heads).causal(true)));
  ln2 = register_module("ln2", std::make_shared<LayerNorm>(model_dim));
  cross_att = register_module(
      "cross_att",
      std::make_shared<CrossAttention>(model_dim, model_dim, model_dim, model_dim, num_heads));
  ln3 = register_module("ln3", std::make_shared<LayerNorm>(model_dim));
  ff1 = register_module("ff1", std::make_shared<Linear>(model_dim, ff_dim));
  ff2 = register_module("ff2", std::make_shared<Linear>(ff_dim, model_dim));
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
    Tensor h = add(x, dropout(self_attend(ln1->forward(x, loc)), dropout_, {}, loc), loc);
    h = add(h,
            dropout(cross_att->forward(ln2->forward(h, loc), memory, memory_axis, loc), dropout_,
                    {}, loc),
            loc);
    Tensor ff = ff2->forward(relu(ff1->forward(ln3->forward(h, loc), loc), loc), loc);
    return add(h, dropout(ff, dropout_, {}, loc), loc);
  });
}

TransformerDecoder::TransformerDecoder(const TransformerOptions& o)
    : Module("transformer_decoder") {
  layers = register_module("layers", layer_stack<TransformerDecoderLayer>(o));
  final_norm = register_module("final_norm", std::make_shared<LayerNorm>(o.model_dim()));
}

Tensor TransformerDecoder::forward(const Tensor& input, const ir::Dim& axis, const Tensor& memory,
                                   const ir::Dim& memory_axis, std::source_location loc) const {
  return call(input, loc, [&](const Tensor& x) {
    Tensor h = x;
    for (size_t i = 0; i < layers->size(); ++i)
      h = layers->at<TransformerDecoderLayer>(i)->forward(h, axis, memory, memory_axis, loc);
    return final_norm->forward(h, loc);
  });
}

Tensor TransformerDecoder::step(const Tensor& input, Loop& loop, const Tensor& memory,
                                const ir::Dim& memory_axis, std::source_location loc) const {
  return call(input, loc, [&](const Tensor& x) {
    Tensor h = x;
    for (size_t i = 0; i < layers->size(); ++i)
      h = layers->at<TransformerDecoderLayer>(i)->step(h, loop, memory, memory_axis, loc);
    return final_norm->forward(h, loc);
  });
}

}  // namespace retc::nn
