// blstm-tagger: two bidirectional LSTM layers with layer norm, a frame
// tagger on RETURNN's Task12AXDataset.
#include "compiler/nn/modules.h"
#include "configs/bundled.h"

namespace retc::configs {
namespace {

using ir::Dim;

class BlstmTagger : public nn::Module {
 public:
  BlstmTagger(Dim in, Dim hidden, Dim classes, double dropout)
      : Module("blstm_tagger"), dropout_(dropout) {
    layer1 = register_module("layer1", std::make_shared<nn::BLstm>(in, hidden, hidden));
    norm = register_module("norm", std::make_shared<nn::LayerNorm>(layer1->out_dim()));
    layer2 =
        register_module("layer2", std::make_shared<nn::BLstm>(layer1->out_dim(), hidden, hidden));
    out = register_module("out", std::make_shared<nn::Linear>(layer2->out_dim(), classes));
  }
  nn::Tensor forward(const nn::Tensor& input, const Dim& time) const {
    return call(input, std::source_location::current(), [&](const nn::Tensor& x) {
      nn::Tensor h = norm->forward(layer1->forward(x, time));
      h = nn::dropout(h, dropout_);
      return out->forward(layer2->forward(h, time));
    });
  }
  std::shared_ptr<nn::BLstm> layer1, layer2;
  std::shared_ptr<nn::LayerNorm> norm;
  std::shared_ptr<nn::Linear> out;

 private:
  double dropout_;
};

void build_blstm_tagger(nn::Builder& b, int64_t hidden, double dropout) {
  const Dim time = Dim::spatial("time");
  const Dim in = Dim::feature("input", 9);
  const Dim classes = Dim::feature("classes", 2);
  nn::Tensor x = b.extern_data("data", {Dim::batch(), time, in});
  nn::Tensor y = b.extern_data("classes", {Dim::batch(), time}, ir::DType::kInt32, classes);
  auto model = b.set_root(
      std::make_shared<BlstmTagger>(in, Dim::feature("hidden", hidden), classes, dropout));
  nn::Tensor logits = model->forward(x, time);
  logits.mark_as_output();
  nn::softmax_cross_entropy(logits, y).mark_as_loss("ce");
}

}  // namespace

ModelDef model_blstm_tagger() {
  ModelDef def;
  def.name = "blstm-tagger";
  def.description = "2-layer BLSTM (16+16 units, layer norm) frame tagger on Task12AXDataset";
  emit::TrainingSetup& t = def.training;
  t.dev = emit::PyValue::dict(
      {{"class", "Task12AXDataset"}, {"num_seqs", 100}, {"fixed_random_seed", 1}});
  t.learning_rate = 0.005;
  t.num_epochs = 5;
  def.options = {int_option("hidden", 16, "LSTM units per direction", 1),
                 float_option("dropout", 0.1, "dropout between the BLSTMs", 0.0, 1.0),
                 int_option("train_seqs", 1000, "training sequences per epoch", 1)};
  for (ModelOption& o : training_options(t)) def.options.push_back(std::move(o));
  def.configure = [](ModelDef& d, const OptionValues& o) {
    d.build = [hidden = o.get_int("hidden"), dropout = o.get_float("dropout")](nn::Builder& b) {
      build_blstm_tagger(b, hidden, dropout);
    };
    d.training.train =
        emit::PyValue::dict({{"class", "Task12AXDataset"}, {"num_seqs", o.get_int("train_seqs")}});
    apply_training_options(o, d.training);
  };
  return configured(std::move(def));
}

}  // namespace retc::configs
