// transformer-copy: a Transformer encoder-decoder on RETURNN's
// CopyTaskDataset: read a random symbol sequence, write it again. Trained
// teacher forced (RETURNN's frame error of the cross-entropy is the token
// error); `retc search` decodes step by step with beam search, feeding back
// its own labels, as many as the source has (the task has no end symbol).
#include "compiler/nn/modules.h"
#include "configs/bundled.h"

namespace retc::configs {
namespace {

using ir::Dim;

class CopyTransformer : public nn::Module {
 public:
  CopyTransformer(Dim vocab, const nn::TransformerOptions& opts) : Module("copy_transformer") {
    const Dim& model = opts.model_dim();
    src_embed = register_module("src_embed", std::make_shared<nn::Embedding>(vocab, model));
    tgt_embed = register_module("tgt_embed", std::make_shared<nn::Embedding>(vocab, model));
    encoder = register_module("encoder", std::make_shared<nn::TransformerEncoder>(opts));
    decoder = register_module("decoder", std::make_shared<nn::TransformerDecoder>(opts));
    out = register_module("out", std::make_shared<nn::Linear>(model, vocab));
  }
  /// The encoder's output over `src_time`.
  nn::Tensor encode(const nn::Tensor& src, const Dim& src_time) const {
    return call(src, std::source_location::current(), [&](const nn::Tensor& s) {
      return encoder->forward(nn::add_positional_encoding(src_embed->forward(s), src_time),
                              src_time);
    });
  }
  /// Logits over `tgt_time`: position t sees the source and targets < t.
  nn::Tensor forward(const nn::Tensor& memory, const Dim& src_time, const nn::Tensor& tgt,
                     const Dim& tgt_time) const {
    return call(memory, std::source_location::current(), [&](const nn::Tensor& m) {
      nn::Tensor dec_in =
          nn::add_positional_encoding(nn::shift_right(tgt_embed->forward(tgt), tgt_time), tgt_time);
      return out->forward(decoder->forward(dec_in, tgt_time, m, src_time));
    });
  }
  /// The labels along the new `out_time`, one per source position: the
  /// decoder step by step (cached keys and values), each label chosen from
  /// the logits (beam search) and fed back as the next frame's input.
  nn::Tensor search(const nn::Tensor& memory, const Dim& src_time, const Dim& out_time,
                    const Dim& vocab) const {
    return call(memory, std::source_location::current(), [&](const nn::Tensor& m) {
      nn::Builder& b = m.builder();
      const Dim& model = memory.dims().back();
      nn::Loop loop(b, out_time);
      EndAtSourceLength end(loop, m, src_time);
      // The embedding of the label before (zeros first, as shift_right).
      nn::Tensor prev = loop.state(nn::constant(b, 0.0), {Dim::batch(), model});
      nn::Tensor h = decoder->step(loop.add_positional_encoding(prev), loop, m, src_time);
      nn::Tensor label = loop.choice(nn::log_softmax(out->forward(h), vocab), vocab);
      loop.next(prev, tgt_embed->forward(label));
      end.end();
      return loop.stack(label);
    });
  }
  std::shared_ptr<nn::Embedding> src_embed, tgt_embed;
  std::shared_ptr<nn::TransformerEncoder> encoder;
  std::shared_ptr<nn::TransformerDecoder> decoder;
  std::shared_ptr<nn::Linear> out;
};

struct CopySizes {
  int64_t layers, model, ff, heads;
  double dropout;
};

void build_transformer_copy(nn::Builder& b, const CopySizes& s) {
  const Dim src_time = Dim::spatial("src_time"), tgt_time = Dim::spatial("tgt_time");
  const Dim vocab = Dim::feature("vocab", 10);
  nn::Tensor src = b.extern_data("data", {Dim::batch(), src_time}, ir::DType::kInt32, vocab);
  nn::Tensor tgt = b.extern_data("classes", {Dim::batch(), tgt_time}, ir::DType::kInt32, vocab);
  auto model = b.set_root(std::make_shared<CopyTransformer>(
      vocab,
      nn::TransformerOptions(Dim::feature("model", s.model), Dim::feature("ff", s.ff), s.heads)
          .num_layers(s.layers)
          .dropout(s.dropout)));
  nn::Tensor memory = model->encode(src, src_time);
  memory.mark_as_output("encoder");  // (e.g. `retc export --output encoder`)
  nn::Tensor logits = model->forward(memory, src_time, tgt, tgt_time);
  logits.mark_as_output();
  nn::softmax_cross_entropy(logits, tgt).mark_as_loss("ce");
  model->search(memory, src_time, Dim::spatial("out_time"), vocab).mark_as_search_output();
}

}  // namespace

emit::PyValue copy_task(int64_t num_seqs, bool fixed) {
  emit::PyValue d = emit::PyValue::dict({{"class", "CopyTaskDataset"},
                                         {"nsymbols", 10},
                                         {"minlen", 5},
                                         {"maxlen", 15},
                                         {"num_seqs", num_seqs}});
  if (fixed) d.set("fixed_random_seed", 1);
  return d;
}

ModelDef model_transformer_copy() {
  ModelDef def;
  def.name = "transformer-copy";
  def.description = "Transformer encoder-decoder copying symbol sequences (CopyTaskDataset)";
  emit::TrainingSetup& t = def.training;
  t.dev = copy_task(200, true);
  t.batch_size = 2000;
  t.max_seqs = 40;
  t.learning_rate = 0.001;
  t.num_epochs = 8;
  def.options = {int_option("layers", 2, "encoder and decoder layers (each)", 1),
                 int_option("model_dim", 64, "model dimension", 1),
                 int_option("ff_dim", 256, "feed-forward dimension", 1),
                 int_option("heads", 4, "attention heads (they divide model_dim)", 1),
                 float_option("dropout", 0.1, "dropout on each residual branch", 0.0, 1.0),
                 int_option("train_seqs", 2000, "training sequences per epoch", 1)};
  for (ModelOption& o : training_options(t)) def.options.push_back(std::move(o));
  def.configure = [](ModelDef& d, const OptionValues& o) {
    const CopySizes s{o.get_int("layers"), o.get_int("model_dim"), o.get_int("ff_dim"),
                      o.get_int("heads"), o.get_float("dropout")};
    d.build = [s](nn::Builder& b) { build_transformer_copy(b, s); };
    d.training.train = copy_task(o.get_int("train_seqs"), false);
    apply_training_options(o, d.training);
  };
  return configured(std::move(def));
}

}  // namespace retc::configs
