// lstm-attention: an LSTM encoder-decoder with attention on RETURNN's
// CopyTaskDataset (as transformer-copy): a BLSTM reads the symbols, an LSTM
// decoder attends to them frame by frame. Training runs the decoder in a
// loop over the targets, fed the target before (teacher forcing); `retc
// search` runs the same step in a loop over a new axis, fed its own choice
// (beam search), for as many frames as the source has.
#include "compiler/nn/modules.h"
#include "configs/bundled.h"

namespace retc::configs {
namespace {

using ir::Dim;

class LstmAttention : public nn::Module {
 public:
  LstmAttention(Dim vocab, Dim embed, Dim enc, Dim dec)
      : Module("lstm_attention"), embed_(embed), dec_(dec) {
    src_embed = register_module("src_embed", std::make_shared<nn::Embedding>(vocab, embed));
    encoder = register_module("encoder", std::make_shared<nn::BLstm>(embed, enc, enc));
    tgt_embed = register_module("tgt_embed", std::make_shared<nn::Embedding>(vocab, embed));
    decoder = register_module("decoder", std::make_shared<nn::Lstm>(embed, dec));
    attention = register_module(
        "attention", std::make_shared<nn::CrossAttention>(dec, encoder->out_dim(), dec, dec, 1));
    out_state = register_module("out_state", std::make_shared<nn::Linear>(dec, vocab));
    out_context = register_module("out_context", std::make_shared<nn::Linear>(dec, vocab, false));
  }

  nn::Tensor encode(const nn::Tensor& src, const Dim& src_time) const {
    return call(src, std::source_location::current(), [&](const nn::Tensor& s) {
      return encoder->forward(src_embed->forward(s), src_time);
    });
  }

  /// One decoder frame: the embedding of the label before and the LSTM's
  /// state before; the logits and the state after.
  std::pair<nn::Tensor, nn::LstmState> step(const nn::Tensor& prev, const nn::LstmState& state,
                                            const nn::Tensor& memory, const Dim& src_time) const {
    nn::LstmState s = decoder->step(prev, state);
    nn::Tensor context = attention->forward(s.h, memory, src_time);
    return {out_state->forward(s.h) + out_context->forward(context), s};
  }

  /// The LSTM's zero state, as loop states.
  nn::LstmState initial(nn::Builder& b, nn::Loop& loop) const {
    return {loop.state(nn::constant(b, 0.0), {Dim::batch(), dec_}),
            loop.state(nn::constant(b, 0.0), {Dim::batch(), dec_})};
  }

  /// Teacher forced: the logits over `tgt_time`, frame t fed target t - 1.
  nn::Tensor forward(const nn::Tensor& memory, const Dim& src_time, const nn::Tensor& tgt,
                     const Dim& tgt_time) const {
    return call(memory, std::source_location::current(), [&](const nn::Tensor& m) {
      nn::Tensor prev_labels = nn::shift_right(tgt_embed->forward(tgt), tgt_time);
      nn::Loop loop(m.builder(), tgt_time);
      nn::LstmState state = initial(m.builder(), loop);
      auto [logits, next] = step(loop.unstack(prev_labels), state, m, src_time);
      loop.next(state.h, next.h);
      loop.next(state.c, next.c);
      loop.end();
      return loop.stack(logits);
    });
  }

  /// Beam search along the new `out_time`, one label per source position.
  nn::Tensor search(const nn::Tensor& memory, const Dim& src_time, const Dim& out_time,
                    const Dim& vocab) const {
    return call(memory, std::source_location::current(), [&](const nn::Tensor& m) {
      nn::Builder& b = m.builder();
      nn::Loop loop(b, out_time);
      EndAtSourceLength end(loop, m, src_time);
      nn::Tensor prev = loop.state(nn::constant(b, 0.0), {Dim::batch(), embed_});
      nn::LstmState state = initial(b, loop);
      auto [logits, next] = step(prev, state, m, src_time);
      nn::Tensor label = loop.choice(nn::log_softmax(logits, vocab), vocab);
      loop.next(prev, tgt_embed->forward(label));
      loop.next(state.h, next.h);
      loop.next(state.c, next.c);
      end.end();
      return loop.stack(label);
    });
  }

  std::shared_ptr<nn::Embedding> src_embed, tgt_embed;
  std::shared_ptr<nn::BLstm> encoder;
  std::shared_ptr<nn::Lstm> decoder;
  std::shared_ptr<nn::CrossAttention> attention;
  std::shared_ptr<nn::Linear> out_state, out_context;

 private:
  Dim embed_, dec_;
};

void build_lstm_attention(nn::Builder& b, int64_t embed, int64_t enc, int64_t dec) {
  const Dim src_time = Dim::spatial("src_time"), tgt_time = Dim::spatial("tgt_time");
  const Dim vocab = Dim::feature("vocab", 10);
  nn::Tensor src = b.extern_data("data", {Dim::batch(), src_time}, ir::DType::kInt32, vocab);
  nn::Tensor tgt = b.extern_data("classes", {Dim::batch(), tgt_time}, ir::DType::kInt32, vocab);
  auto model = b.set_root(std::make_shared<LstmAttention>(
      vocab, Dim::feature("embed", embed), Dim::feature("enc", enc), Dim::feature("dec", dec)));
  nn::Tensor memory = model->encode(src, src_time);
  nn::Tensor logits = model->forward(memory, src_time, tgt, tgt_time);
  logits.mark_as_output();
  nn::softmax_cross_entropy(logits, tgt).mark_as_loss("ce");
  model->search(memory, src_time, Dim::spatial("out_time"), vocab).mark_as_search_output();
}

}  // namespace

ModelDef model_lstm_attention() {
  ModelDef def = model_transformer_copy();  // the same task and training setup
  def.name = "lstm-attention";
  def.description =
      "LSTM encoder-decoder with attention copying symbol sequences (CopyTaskDataset)";
  def.training.num_epochs = 20;  // 97% sequence accuracy in search (TF, 23 s here)
  def.options = {int_option("embed", 32, "label embedding size", 1),
                 int_option("enc", 64, "encoder BLSTM units per direction", 1),
                 int_option("dec", 64, "decoder LSTM units (and attention key size)", 1),
                 int_option("train_seqs", 2000, "training sequences per epoch", 1)};
  for (ModelOption& o : training_options(def.training)) def.options.push_back(std::move(o));
  def.configure = [](ModelDef& d, const OptionValues& o) {
    d.build = [embed = o.get_int("embed"), enc = o.get_int("enc"), dec = o.get_int("dec")](
                  nn::Builder& b) { build_lstm_attention(b, embed, enc, dec); };
    d.training.train = copy_task(o.get_int("train_seqs"), false);
    apply_training_options(o, d.training);
  };
  return configured(std::move(def));
}

}  // namespace retc::configs
