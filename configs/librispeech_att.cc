// librispeech-att-2019: the published LibriSpeech attention system
// (rwth-i6/returnn-experiments, 2019-librispeech-system/attention/
// base2.conv2l.specaug.curric3.config; Zeyer et al., "A comprehensive
// analysis on attention models", 2019), written with retc's modules: two 3x3
// convs with max pooling over the 40 features, 6 BLSTM layers (1024 per
// direction) with max pooling in time (3, then 2), an LSTM decoder (1000)
// with additive (MLP) attention whose weights accumulate with a learned
// inverse fertility and feed back into the energies, a maxout readout, label
// smoothing, an auxiliary CTC loss on the encoder, SpecAugment, and beam
// search over the 10025 BPE labels (0: end of sentence).
//
// Trained here on random features and labels of the published dims
// (`retc train librispeech-att-2019` runs one short epoch on CPU; `retc
// search` decodes after it).
#include "compiler/nn/audio.h"
#include "compiler/nn/modules.h"
#include "configs/bundled.h"

namespace retc::configs {
namespace {

using ir::Dim;

/// Conv 3x3 (32) -> max pool 1x2 over features -> conv 3x3 (32) -> max pool
/// 1x2 -> features and channels merged (no activations, as published).
class ConvFrontend : public nn::Module {
 public:
  explicit ConvFrontend(Dim features)
      : Module("conv_frontend"),
        features_(features),
        feat_(Dim::spatial("feat", *features.size())),
        chan0_(Dim::feature("chan0", 1)),
        pooled1_(Dim::spatial("feat_pooled1", *features.size() / 2)),
        pooled2_(Dim::spatial("feat_pooled2", *features.size() / 4)),
        chan_(Dim::feature("conv_channels", 32)),
        out_dim_(Dim::feature("conv_merged", *features.size() / 4 * 32)) {
    conv0 = register_module("conv0",
                            std::make_shared<nn::Conv2d>(nn::Conv2dOptions(chan0_, chan_, {3, 3})));
    conv1 = register_module("conv1",
                            std::make_shared<nn::Conv2d>(nn::Conv2dOptions(chan_, chan_, {3, 3})));
  }
  const Dim& out_dim() const { return out_dim_; }
  nn::Tensor forward(const nn::Tensor& x, const Dim& time) const {
    return call(x, std::source_location::current(), [&](const nn::Tensor& in) {
      nn::Tensor h = nn::split_dims(in, features_, {feat_, chan0_});
      h = nn::pool(conv0->forward(h, time, feat_), "max", {time, feat_}, {1, 2}, {1, 2}, "same",
                   {time, pooled1_});
      h = nn::pool(conv1->forward(h, time, pooled1_), "max", {time, pooled1_}, {1, 2}, {1, 2},
                   "same", {time, pooled2_});
      return nn::merge_dims(h, {pooled2_, chan_}, out_dim_);
    });
  }
  std::shared_ptr<nn::Conv2d> conv0, conv1;

 private:
  Dim features_, feat_, chan0_, pooled1_, pooled2_, chan_, out_dim_;
};

/// Per decoder frame: the attention's accumulated weights, the context and
/// the LSTM's state before it, and the embedding of the label before.
struct DecoderState {
  nn::Tensor prev_embed, accum, context;
  nn::LstmState lstm;
};

class LibriSpeechAttention : public nn::Module {
 public:
  LibriSpeechAttention(Dim features, Dim vocab, int64_t lstm_layers, int64_t lstm_units,
                       std::vector<int64_t> pools)
      : Module("librispeech_attention"),
        vocab_(vocab),
        pools_(std::move(pools)),
        lstm_dim_(Dim::feature("lstm", lstm_units)),
        enc_dim_(lstm_dim_ + lstm_dim_),
        key_(Dim::feature("enc_key", 1024)),
        heads_(Dim::feature("att_heads", 1)),
        embed_dim_(Dim::feature("target_embed", 621)),
        dec_dim_(Dim::feature("dec", 1000)),
        readout_dim_(Dim::feature("readout", 500)),
        pieces_(Dim::feature("maxout_pieces", 2)),
        lstm_in_(embed_dim_ + enc_dim_),
        readout_in_(dec_dim_ + embed_dim_ + enc_dim_) {
    frontend = register_module("frontend", std::make_shared<ConvFrontend>(features));
    encoder = register_module("encoder", std::make_shared<nn::ModuleList>());
    Dim in = frontend->out_dim();
    for (int64_t i = 0; i < lstm_layers; ++i) {
      encoder->append(std::make_shared<nn::BLstm>(in, lstm_dim_, lstm_dim_));
      in = enc_dim_;
    }
    enc_ctx = register_module("enc_ctx", std::make_shared<nn::Linear>(in, key_));
    inv_fertility =
        register_module("inv_fertility", std::make_shared<nn::Linear>(in, heads_, false));
    target_embed =
        register_module("target_embed", std::make_shared<nn::Embedding>(vocab, embed_dim_));
    weight_feedback =
        register_module("weight_feedback", std::make_shared<nn::Linear>(heads_, key_, false));
    s_transformed =
        register_module("s_transformed", std::make_shared<nn::Linear>(dec_dim_, key_, false));
    energy = register_module("energy", std::make_shared<nn::Linear>(key_, heads_, false));
    s = register_module("s", std::make_shared<nn::Lstm>(lstm_in_, dec_dim_));
    readout_in =
        register_module("readout_in", std::make_shared<nn::Linear>(readout_in_, 2 * readout_dim_));
    output_prob = register_module("output_prob", std::make_shared<nn::Linear>(readout_dim_, vocab));
    ctc =
        register_module("ctc", std::make_shared<nn::Linear>(in, vocab + Dim::feature("blank", 1)));
  }

  /// The encoder output [B, enc_time, 2048] and its axis.
  std::pair<nn::Tensor, Dim> encode(const nn::Tensor& features, const Dim& time) const {
    Dim axis = time;
    nn::Tensor enc = call(features, std::source_location::current(), [&](const nn::Tensor& x) {
      nn::Tensor h = frontend->forward(nn::specaugment(x, time, x.dims().back()), time);
      for (size_t i = 0; i < encoder->size(); ++i) {
        // Dropout 0.3 on the input of every layer but the first.
        if (i > 0) h = nn::dropout(h, 0.3, {h.dims().back()});
        h = encoder->at<nn::BLstm>(i)->forward(h, axis);
        if (i < pools_.size() && pools_[i] > 1) {
          const Dim pooled = nn::windowed_dim(axis, pools_[i], pools_[i], 1, "same");
          h = nn::pool(h, "max", {axis}, {pools_[i]}, {pools_[i]}, "same", {pooled});
          axis = pooled;
        }
      }
      return h;
    });
    return {enc, axis};
  }

  /// What the decoder reads of the encoder, computed once.
  struct Memory {
    nn::Tensor enc, ctx, inv_fertility;
    Dim axis;
  };
  Memory memory(const nn::Tensor& enc, const Dim& axis) const {
    return {enc, enc_ctx->forward(enc), nn::sigmoid(inv_fertility->forward(enc)), axis};
  }

  /// The states, zero before the first frame (prev_embed left to the caller).
  DecoderState initial(nn::Builder& b, nn::Loop& loop, const Memory& m) const {
    return {nn::Tensor(),
            loop.state(nn::constant(b, 0.0, {Dim::batch(), m.axis, heads_}, {m.enc})),
            loop.state(nn::constant(b, 0.0), {Dim::batch(), enc_dim_}),
            {loop.state(nn::constant(b, 0.0), {Dim::batch(), dec_dim_}),
             loop.state(nn::constant(b, 0.0), {Dim::batch(), dec_dim_})}};
  }

  /// One decoder frame: the logits, and the state after it (prev_embed left
  /// to the caller: the target's or the choice's embedding).
  std::pair<nn::Tensor, DecoderState> step(const DecoderState& st, const Memory& m) const {
    const Dim& enc = enc_dim_;
    nn::LstmState lstm = s->step(nn::concat(st.prev_embed, embed_dim_, st.context, enc), st.lstm);
    nn::Tensor energy_in =
        m.ctx + weight_feedback->forward(st.accum) + s_transformed->forward(lstm.h);
    nn::Tensor weights = nn::softmax(energy->forward(nn::tanh(energy_in)), m.axis);
    nn::Tensor accum = st.accum + weights * m.inv_fertility * nn::constant(weights.builder(), 0.5);
    nn::Tensor context = nn::reduce(nn::dot(weights, m.enc, {m.axis}), "sum", {heads_});
    const Dim rd = dec_dim_ + embed_dim_;
    nn::Tensor readout_input =
        nn::concat(nn::concat(lstm.h, dec_dim_, st.prev_embed, embed_dim_), rd, context, enc);
    nn::Tensor pieces = nn::split_dims(readout_in->forward(readout_input), 2 * readout_dim_,
                                       {readout_dim_, pieces_});
    nn::Tensor readout = nn::reduce(pieces, "max", {pieces_});
    nn::Tensor logits = output_prob->forward(nn::dropout(readout, 0.3, {readout_dim_}));
    return {logits, {st.prev_embed, accum, context, lstm}};
  }

  /// Teacher forced over `label_time`: the logits, frame t fed target t - 1.
  nn::Tensor decode(const Memory& m, const nn::Tensor& targets, const Dim& label_time) const {
    return call(m.enc, std::source_location::current(), [&](const nn::Tensor&) {
      nn::Builder& b = m.enc.builder();
      nn::Tensor prev = nn::shift_right(target_embed->forward(targets), label_time);
      nn::Loop loop(b, label_time);
      DecoderState st = initial(b, loop, m);
      st.prev_embed = loop.unstack(prev);
      auto [logits, next] = step(st, m);
      next_states(loop, st, next);
      loop.end();
      return loop.stack(logits);
    });
  }

  /// Beam search along the new `out_time` until the end label 0, at most as
  /// many frames as the encoder has.
  nn::Tensor search(const Memory& m, const Dim& out_time) const {
    return call(m.enc, std::source_location::current(), [&](const nn::Tensor&) {
      nn::Builder& b = m.enc.builder();
      nn::Tensor max_len =
          nn::cast(nn::reduce(nn::cast(nn::length(m.enc, m.axis), ir::DType::kFloat32), "max",
                              {Dim::batch()}),
                   ir::DType::kInt32);
      nn::Loop loop(b, out_time);
      DecoderState st = initial(b, loop, m);
      st.prev_embed = loop.state(nn::constant(b, 0.0), {Dim::batch(), embed_dim_});
      auto [logits, next] = step(st, m);
      nn::Tensor label = loop.choice(nn::log_softmax(logits, vocab_), vocab_);
      loop.next(st.prev_embed, target_embed->forward(label));
      next_states(loop, st, next);
      nn::Tensor eos = nn::cast(nn::constant(b, 0.0), ir::DType::kInt32);
      loop.end(nn::compare(label, eos, "equal"), max_len);
      return loop.stack(label);
    });
  }

  std::shared_ptr<ConvFrontend> frontend;
  std::shared_ptr<nn::ModuleList> encoder;
  std::shared_ptr<nn::Linear> enc_ctx, inv_fertility, weight_feedback, s_transformed, energy,
      readout_in, output_prob, ctc;
  std::shared_ptr<nn::Embedding> target_embed;
  std::shared_ptr<nn::Lstm> s;

 private:
  static void next_states(nn::Loop& loop, const DecoderState& st, const DecoderState& next) {
    loop.next(st.accum, next.accum);
    loop.next(st.context, next.context);
    loop.next(st.lstm.h, next.lstm.h);
    loop.next(st.lstm.c, next.lstm.c);
  }

  Dim vocab_;
  std::vector<int64_t> pools_;
  Dim lstm_dim_, enc_dim_, key_, heads_, embed_dim_, dec_dim_, readout_dim_, pieces_, lstm_in_,
      readout_in_;
};

void build_librispeech_att(nn::Builder& b, int64_t layers, int64_t units) {
  const Dim time = Dim::spatial("time"), label_time = Dim::spatial("label_time");
  const Dim features = Dim::feature("features", 40), vocab = Dim::feature("vocab", 10025);
  nn::Tensor x = b.extern_data("data", {Dim::batch(), time, features});
  nn::Tensor y = b.extern_data("classes", {Dim::batch(), label_time}, ir::DType::kInt32, vocab);
  auto model = b.set_root(std::make_shared<LibriSpeechAttention>(features, vocab, layers, units,
                                                                 std::vector<int64_t>{3, 2}));
  auto [enc, enc_time] = model->encode(x, time);
  const auto m = model->memory(enc, enc_time);
  nn::Tensor logits = model->decode(m, y, label_time);
  logits.mark_as_output();
  nn::LossOptions ce;
  ce.label_smoothing = 0.1;
  nn::softmax_cross_entropy(logits, y, ce).mark_as_loss("ce");
  nn::ctc_loss(model->ctc->forward(enc), y, enc_time).mark_as_loss("ctc");
  model->search(m, Dim::spatial("out_time")).mark_as_search_output();
}

/// Random features (40, 60-120 frames) and labels (10025, 3-10 per sequence).
emit::PyValue random_speech(int64_t num_seqs) {
  return emit::PyValue::dict(
      {{"class", "DummyGenericDataset"},
       {"data_template", emit::PyValue::ref("extern_data")},
       {"num_seqs", num_seqs},
       {"seq_lens", emit::PyValue::dict({{"data", emit::PyValue::tuple({60, 120})},
                                         {"classes", emit::PyValue::tuple({3, 10})}})}});
}

}  // namespace

ModelDef model_librispeech_att() {
  ModelDef def;
  def.name = "librispeech-att-2019";
  def.description =
      "published LibriSpeech BLSTM attention system (6x1024 BLSTM, 10025 BPE; random data)";
  emit::TrainingSetup& t = def.training;
  t.dev = random_speech(2);
  t.batch_size = 1000;
  t.max_seqs = 3;
  t.optimizer = emit::PyValue::dict({{"class", "adam"}, {"epsilon", 1e-8}});
  t.learning_rate = 0.0008;
  t.accumulate_gradients = 2;
  t.num_epochs = 1;
  def.options = {
      int_option("lstm_layers", 6, "encoder BLSTM layers (max-pooled after the first two)", 1),
      int_option("lstm_dim", 1024, "encoder LSTM units per direction", 1),
      warmup_option(10, "0.0003"),
      int_option("accumulate_gradients", 2, "steps whose gradients make one update", 1),
      // One step (max_seqs): the tests train one epoch.
      int_option("train_seqs", 3, "training sequences per epoch (random data)", 1)};
  for (ModelOption& o : training_options(t)) def.options.push_back(std::move(o));
  def.configure = [](ModelDef& d, const OptionValues& o) {
    d.build = [layers = o.get_int("lstm_layers"), units = o.get_int("lstm_dim")](nn::Builder& b) {
      build_librispeech_att(b, layers, units);
    };
    d.training.train = random_speech(o.get_int("train_seqs"));
    apply_training_options(o, d.training);
    d.training.accumulate_gradients = o.get_int("accumulate_gradients");
    apply_warmup(o, 0.0003, d.training);
  };
  return configured(std::move(def));
}

}  // namespace retc::configs
