// conformer-transducer: conformer-ctc's task (a binary number read digit by
// digit, written in hexadecimal; RETURNN's TaskNumberBaseConvertDataset) with
// a transducer instead of CTC: a Conformer encoder (time stride 2), a
// prediction network (an embedding of the previous symbol and an LSTM; blank
// doubles as its start symbol) and a joint network (tanh of the projected
// sum, then a linear layer to the 16 digits + blank). It trains on the
// monotonic transducer loss (one symbol per frame: RNA) and decodes
// time-synchronously: at each encoder frame a blank or one digit, the
// prediction network advancing on digits only. With `--set topology=rnnt` it
// trains on the standard RNN-T loss (any number of digits per frame, a blank
// ends the frame) and decodes alignment-length synchronously (Saon et al.
// 2020): each step emits a blank, which moves on to the next frame, or a
// digit, which stays at the frame. `retc search` runs beam search over that
// loop (`--beam 1`: greedy); training reports the label error of the greedy
// decoding (edit distance over the target length).
#include "compiler/nn/modules.h"
#include "configs/bundled.h"

namespace retc::configs {
namespace {

using ir::Dim;

struct TransducerSizes {
  int64_t blocks, model, ff, heads, kernel, pred, joint;
  double dropout;
  bool rnnt;  // the standard RNN-T topology, else RNA (one symbol per frame)
  int64_t time_stride;
};

class ConformerTransducer : public nn::Module {
 public:
  ConformerTransducer(Dim vocab, Dim features, Dim symbols, const TransducerSizes& s,
                      const nn::ConformerOptions& opts)
      : Module("conformer_transducer"), symbols_(symbols) {
    const Dim model = Dim::feature("model", s.model), pred = Dim::feature("pred", s.pred);
    const Dim pred_embed = Dim::feature("pred_embed", s.pred);
    const Dim joint = Dim::feature("joint", s.joint);
    embed = register_module("embed", std::make_shared<nn::Embedding>(vocab, features));
    encoder = register_module("encoder", std::make_shared<nn::ConformerEncoder>(
                                             features, model, Dim::feature("ff", s.ff), opts));
    enc_proj = register_module("enc_proj", std::make_shared<nn::Linear>(model, joint));
    pred_embed_ =
        register_module("pred_embed", std::make_shared<nn::Embedding>(symbols, pred_embed));
    pred_lstm = register_module("pred_lstm", std::make_shared<nn::Lstm>(pred_embed, pred));
    pred_proj = register_module("pred_proj", std::make_shared<nn::Linear>(pred, joint));
    joint_out = register_module("joint_out", std::make_shared<nn::Linear>(joint, symbols));
  }
  /// The joint network's logits over the symbols for encoder frames `enc`
  /// (projected) and prediction outputs `pred` (projected); they broadcast.
  nn::Tensor joint_logits(const nn::Tensor& enc, const nn::Tensor& pred) const {
    return joint_out->forward(nn::tanh(enc + pred));
  }
  int64_t blank() const { return *symbols_.size() - 1; }
  const Dim& symbols() const { return symbols_; }

  std::shared_ptr<nn::Embedding> embed, pred_embed_;
  std::shared_ptr<nn::ConformerEncoder> encoder;
  std::shared_ptr<nn::Linear> enc_proj, pred_proj, joint_out;
  std::shared_ptr<nn::Lstm> pred_lstm;

 private:
  Dim symbols_;
};

// The prediction network in a decoding loop. Its states hold the previous
// step's symbol, the last digit (blank as the start symbol) with the LSTM
// state before it, and the LSTM state after it; what the previous symbol
// changes is selected at the start of a step from states alone, so that in
// RETURNN's beam search every state follows the previous step's choice: a
// digit becomes the last digit, consumed from the state after the one
// before; after a blank all stays.
class PredictionSteps {
 public:
  PredictionSteps(nn::Builder& b, nn::Loop& loop, const ConformerTransducer& m,
                  const nn::Tensor& enc)
      : b_(b), loop_(loop), m_(m) {
    auto blank_label = [&] {
      return nn::sparse_constant(b, m.blank(), m.symbols(), {Dim::batch()}, {enc});
    };
    const Dim pred = m.pred_lstm->out_dim();
    auto zeros = [&] { return loop.state(nn::constant(b, 0.0, {pred}), {Dim::batch(), pred}); };
    prev_sym_ = loop.state(blank_label(), {Dim::batch()});
    last_ = loop.state(blank_label(), {Dim::batch()});
    before_ = {zeros(), zeros()};
    after_ = {zeros(), zeros()};
    const nn::Tensor stay = is_blank(prev_sym_);
    digit_ = nn::where(stay, last_, prev_sym_);
    from_ = {nn::where(stay, before_.h, after_.h), nn::where(stay, before_.c, after_.c)};
    st_ = m.pred_lstm->step(m.pred_embed_->forward(digit_), from_);
  }
  /// The step's symbol from the joint network's logits for encoder frame
  /// `enc_t` (`search`: the beam's choice, else the best one); the states'
  /// next values follow it.
  nn::Tensor choose(const nn::Tensor& enc_t, bool search) {
    const Dim& symbols = m_.symbols();
    nn::Tensor logits = m_.joint_logits(enc_t, m_.pred_proj->forward(st_.h));
    nn::Tensor sym = search ? loop_.choice(nn::log_softmax(logits, symbols), symbols)
                            : nn::argmax(logits, symbols);
    loop_.next(prev_sym_, sym);
    loop_.next(last_, digit_);
    loop_.next(before_.h, from_.h);
    loop_.next(before_.c, from_.c);
    loop_.next(after_.h, st_.h);
    loop_.next(after_.c, st_.c);
    return sym;
  }
  nn::Tensor is_blank(const nn::Tensor& sym) const {
    return nn::compare(
        nn::cast(sym, ir::DType::kInt32),
        nn::cast(nn::constant(b_, static_cast<double>(m_.blank())), ir::DType::kInt32), "equal");
  }
  /// The stacked symbols of the loop's steps, blanks removed, along `hyp_time`.
  nn::Tensor digits(const nn::Tensor& sym, const Dim& hyp_time) {
    const nn::Tensor all = loop_.stack(sym);
    return nn::masked_select(all, nn::logical_not(is_blank(all)), loop_.axis(), hyp_time);
  }

 private:
  nn::Builder& b_;
  nn::Loop& loop_;
  const ConformerTransducer& m_;
  nn::Tensor prev_sym_, last_, digit_;
  nn::LstmState before_, after_, from_, st_;
};

// Time-synchronous decoding (RNA): a loop over the encoder frames; each frame
// emits a blank or a digit, and a digit advances the prediction network.
// Returns the emitted digits along `hyp_time`.
nn::Tensor decode_transducer(nn::Builder& b, const ConformerTransducer& m, const nn::Tensor& enc,
                             const Dim& enc_time, const Dim& hyp_time, bool search) {
  nn::Loop loop(b, enc_time);
  PredictionSteps pred(b, loop, m, enc);
  const nn::Tensor sym = pred.choose(loop.unstack(enc), search);
  loop.end();
  return pred.digits(sym, hyp_time);
}

// Standard RNN-T decoding, alignment-length synchronous: a loop over
// alignment steps, each a choice of a blank or a digit at the current frame
// (a state per hypothesis): a blank moves to the next frame, a digit stays
// and advances the prediction network. A sequence ends when a blank leaves
// its last frame, at the latest after (1 + max_per_frame) steps per frame of
// the longest sequence. Returns the digits along `hyp_time`.
nn::Tensor decode_rnnt(nn::Builder& b, const ConformerTransducer& m, const nn::Tensor& enc,
                       const Dim& enc_time, const Dim& hyp_time, bool search,
                       int64_t max_per_frame = 3) {
  const nn::Tensor frames = nn::cast(nn::length(enc, enc_time), ir::DType::kFloat32);
  const nn::Tensor max_steps =
      nn::cast(nn::mul(nn::reduce(frames, "max", {Dim::batch()}),
                       nn::constant(b, static_cast<double>(1 + max_per_frame))),
               ir::DType::kInt32);
  nn::Loop loop(b, Dim::spatial("align_time"));
  nn::Tensor frame = loop.state(nn::constant(b, 0.0), {Dim::batch()});
  PredictionSteps pred(b, loop, m, enc);
  // The current frame (a finished hypothesis reads its last one).
  const nn::Tensor at =
      nn::cast(nn::minimum(frame, nn::sub(frames, nn::constant(b, 1.0))), ir::DType::kInt32);
  const nn::Tensor sym =
      pred.choose(nn::gather(enc, nn::as_indices(at, enc_time), enc_time), search);
  const nn::Tensor next_frame = nn::add(frame, nn::cast(pred.is_blank(sym), ir::DType::kFloat32));
  loop.next(frame, next_frame);
  loop.end(nn::compare(next_frame, frames, "greater_equal"), max_steps);
  return pred.digits(sym, hyp_time);
}

void build_transducer(nn::Builder& b, const TransducerSizes& s) {
  const Dim time = Dim::spatial("time"), label_time = Dim::spatial("label_time");
  const Dim digits = Dim::feature("digits", 2), hex = Dim::feature("hex", 16);
  const Dim symbols = hex + Dim::feature("blank", 1);
  nn::Tensor x = b.extern_data("data", {Dim::batch(), time}, ir::DType::kInt32, digits);
  nn::Tensor y = b.extern_data("classes", {Dim::batch(), label_time}, ir::DType::kInt32, hex);
  auto opts = number_task_encoder(s.blocks, s.heads, s.kernel, s.dropout);
  // A stride above 2: a Conv1d frontend whose kernel spans its stride (the
  // VGG frontend's 3x3 kernel would skip frames).
  if (s.time_stride != 2)
    opts.frontend("conv1d").frontend_kernel(s.time_stride).time_stride(s.time_stride);
  auto m = b.set_root(std::make_shared<ConformerTransducer>(digits, Dim::feature("features", 16),
                                                            symbols, s, opts));
  nn::Tensor enc = m->enc_proj->forward(m->encoder->forward(m->embed->forward(x), time));
  const Dim enc_time = m->encoder->out_axis(time);
  // Training: the prediction network over BOS (blank) + the digits, the joint
  // network at every (frame, position), the monotonic transducer loss (RNA),
  // or with topology rnnt the standard one.
  nn::Tensor pred_in =
      nn::pad(nn::as_indices(y, symbols), label_time, 1, 0, static_cast<double>(m->blank()));
  const Dim pred_time = pred_in.dims()[1];
  nn::Tensor pred =
      m->pred_proj->forward(m->pred_lstm->forward(m->pred_embed_->forward(pred_in), pred_time));
  nn::Tensor logits = m->joint_logits(enc, pred);
  nn::Tensor nll =
      nn::transducer_loss(logits, y, enc_time, label_time, pred_time, {.monotonic = !s.rnnt});
  nn::custom_loss(nll).mark_as_loss("rnnt");
  // The label error of the greedy decoding: each sequence's edit distance
  // spread over its digits, normalized by all digits (a label error rate).
  const Dim greedy_time = Dim::spatial("greedy_time");
  nn::Tensor greedy = s.rnnt ? decode_rnnt(b, *m, enc, enc_time, greedy_time, false)
                             : decode_transducer(b, *m, enc, enc_time, greedy_time, false);
  nn::Tensor edits =
      nn::cast(nn::edit_distance(greedy, greedy_time, y, label_time), ir::DType::kFloat32);
  nn::Tensor n = nn::cast(nn::length(y, label_time), ir::DType::kFloat32);
  nn::Tensor per_digit = nn::mask_padding(
      nn::constant(b, 1.0, {Dim::batch(), label_time}, {y}) * (edits / n), label_time);
  nn::custom_loss(per_digit, {.as_error = true, .normalize = true}).mark_as_loss("label_error");
  // What `retc search` decodes: the beam search over the same loop.
  const Dim hyp_time = Dim::spatial("hyp_time");
  (s.rnnt ? decode_rnnt(b, *m, enc, enc_time, hyp_time, true)
          : decode_transducer(b, *m, enc, enc_time, hyp_time, true))
      .mark_as_search_output();
}

}  // namespace

ModelDef model_conformer_transducer() {
  ModelDef def;
  def.name = "conformer-transducer";
  def.description =
      "small Conformer transducer (RNA loss, time-synchronous beam search): binary numbers to "
      "hexadecimal digits";
  emit::TrainingSetup& t = def.training;
  t = number_task_setup();
  def.options = {int_option("blocks", 2, "conformer blocks", 1),
                 int_option("model_dim", 64, "model dimension", 1),
                 int_option("ff_dim", 128, "feed-forward dimension", 1),
                 int_option("heads", 4, "self-attention heads (they divide model_dim)", 1),
                 int_option("conv_kernel", 7, "the convolution module's kernel size", 1),
                 int_option("pred_dim", 64, "the prediction network's LSTM size", 1),
                 int_option("joint_dim", 64, "the joint network's size", 1),
                 float_option("dropout", 0.1, "dropout in each block", 0.0, 1.0),
                 enum_option("topology", "rna", {"rna", "rnnt"},
                             "rna: one symbol per frame (monotonic loss, time-synchronous "
                             "decoding); rnnt: any number of digits per frame (the standard "
                             "RNN-T loss, alignment-length synchronous decoding)"),
                 int_option("time_stride", 2,
                            "the encoder's time subsampling (2: the VGG frontend; else a Conv1d "
                            "frontend of that kernel and stride; 8 leaves about half a frame "
                            "per hex digit: only rnnt can align)",
                            1),
                 int_option("train_seqs", 2000, "training sequences per epoch", 1)};
  for (ModelOption& o : training_options(t)) def.options.push_back(std::move(o));
  def.configure = [](ModelDef& d, const OptionValues& o) {
    const TransducerSizes s{
        o.get_int("blocks"),     o.get_int("model_dim"),   o.get_int("ff_dim"),
        o.get_int("heads"),      o.get_int("conv_kernel"), o.get_int("pred_dim"),
        o.get_int("joint_dim"),  o.get_float("dropout"),   o.get_string("topology") == "rnnt",
        o.get_int("time_stride")};
    d.build = [s](nn::Builder& b) { build_transducer(b, s); };
    d.training.train = number_task(o.get_int("train_seqs"), false);
    apply_training_options(o, d.training);
  };
  return configured(std::move(def));
}

}  // namespace retc::configs
