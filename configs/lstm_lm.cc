// lstm-lm: a character-level LSTM language model on RETURNN's
// TaskXmlModelingDataset: predict the next symbol of synthetic XML (closing
// tags must be recalled from memory; unpredictable symbols are a blank).
#include "compiler/nn/modules.h"
#include "configs/bundled.h"

namespace retc::configs {
namespace {

using ir::Dim;

class LstmLm : public nn::Module {
 public:
  LstmLm(Dim vocab, Dim embed, Dim hidden) : Module("lstm_lm") {
    // The dataset gives one-hot input vectors: a Linear is the embedding.
    this->embed = register_module("embed", std::make_shared<nn::Linear>(vocab, embed, false));
    lstm = register_module("lstm", std::make_shared<nn::Lstm>(embed, hidden));
    out = register_module("out", std::make_shared<nn::Linear>(hidden, vocab));
  }
  nn::Tensor forward(const nn::Tensor& input, const Dim& time) const {
    return call(input, std::source_location::current(), [&](const nn::Tensor& x) {
      return out->forward(nn::dropout(lstm->forward(embed->forward(x), time), 0.1));
    });
  }
  std::shared_ptr<nn::Linear> embed, out;
  std::shared_ptr<nn::Lstm> lstm;
};

void build_lstm_lm(nn::Builder& b) {
  const Dim time = Dim::spatial("time");
  const Dim vocab = Dim::feature("vocab", 12);  // " <>/abcdefgh"
  nn::Tensor x = b.extern_data("data", {Dim::batch(), time, vocab});
  nn::Tensor y = b.extern_data("classes", {Dim::batch(), time}, ir::DType::kInt32, vocab);
  auto model = b.set_root(
      std::make_shared<LstmLm>(vocab, Dim::feature("embed", 32), Dim::feature("hidden", 64)));
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
  def.build = build_lstm_lm;
  emit::TrainingSetup& t = def.training;
  t.train = emit::PyValue::dict({{"class", "TaskXmlModelingDataset"}, {"num_seqs", 1000}});
  t.dev = emit::PyValue::dict(
      {{"class", "TaskXmlModelingDataset"}, {"num_seqs", 100}, {"fixed_random_seed", 1}});
  t.learning_rate = 0.005;
  t.num_epochs = 5;
  return def;
}

}  // namespace retc::configs
