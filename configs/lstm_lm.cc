// lstm-lm: a character-level LSTM language model on RETURNN's
// TaskXmlModelingDataset: predict the next symbol of synthetic XML (closing
// tags must be recalled from memory; unpredictable symbols are a blank).
#include "compiler/nn/modules.h"
#include "configs/bundled.h"

namespace retc::configs {
namespace {

using ir::Dim;

void build_lstm_lm(nn::Builder& b, int64_t embed, int64_t hidden, double dropout) {
  const Dim time = Dim::spatial("time");
  const Dim vocab = Dim::feature("vocab", 12);  // " <>/abcdefgh"
  nn::Tensor x = b.extern_data("data", {Dim::batch(), time, vocab});
  nn::Tensor y = b.extern_data("classes", {Dim::batch(), time}, ir::DType::kInt32, vocab);
  auto model = b.set_root(std::make_shared<LstmLm>(vocab, Dim::feature("embed", embed),
                                                   Dim::feature("hidden", hidden), dropout));
  nn::Tensor logits = model->forward(x, time);
  logits.mark_as_output();
  nn::softmax_cross_entropy(logits, y).mark_as_loss("ce");
}

}  // namespace

ModelDef model_lstm_lm() {
  ModelDef def;
  def.name = "lstm-lm";
  def.description =
      "character LSTM language model on TaskXmlModelingDataset (next-symbol prediction)";
  emit::TrainingSetup& t = def.training;
  t.dev = emit::PyValue::dict(
      {{"class", "TaskXmlModelingDataset"}, {"num_seqs", 100}, {"fixed_random_seed", 1}});
  t.learning_rate = 0.005;
  t.num_epochs = 5;
  def.options = {int_option("embed", 32, "embedding size", 1),
                 int_option("hidden", 64, "LSTM units", 1),
                 float_option("dropout", 0.1, "dropout on the LSTM's output", 0.0, 1.0),
                 int_option("train_seqs", 1000, "training sequences per epoch", 1)};
  for (ModelOption& o : training_options(t)) def.options.push_back(std::move(o));
  def.configure = [](ModelDef& d, const OptionValues& o) {
    d.build = [embed = o.get_int("embed"), hidden = o.get_int("hidden"),
               dropout = o.get_float("dropout")](nn::Builder& b) {
      build_lstm_lm(b, embed, hidden, dropout);
    };
    d.training.train = emit::PyValue::dict(
        {{"class", "TaskXmlModelingDataset"}, {"num_seqs", o.get_int("train_seqs")}});
    apply_training_options(o, d.training);
  };
  return configured(std::move(def));
}

}  // namespace retc::configs
