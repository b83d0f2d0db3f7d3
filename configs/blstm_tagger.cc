// blstm-tagger: two bidirectional LSTM layers with layer norm, a frame
// tagger on RETURNN's Task12AXDataset.
#include "compiler/nn/modules.h"
#include "configs/bundled.h"

namespace retc::configs {
namespace {

using ir::Dim;

class BlstmTagger : public nn::Module {
 public:
  BlstmTagger(Dim in, Dim hidden, Dim classes) : Module("blstm_tagger") {
    layer1 = register_module("layer1", std::make_shared<nn::BLstm>(in, hidden, hidden));
    norm = register_module("norm", std::make_shared<nn::LayerNorm>(layer1->out_dim()));
    layer2 =
        register_module("layer2", std::make_shared<nn::BLstm>(layer1->out_dim(), hidden, hidden));
    out = register_module("out", std::make_shared<nn::Linear>(layer2->out_dim(), classes));
  }
  nn::Tensor forward(const nn::Tensor& input, const Dim& time) const {
    return call(input, std::source_location::current(), [&](const nn::Tensor& x) {
      nn::Tensor h = norm->forward(layer1->forward(x, time));
      h = nn::dropout(h, 0.1);
      return out->forward(layer2->forward(h, time));
    });
  }
  std::shared_ptr<nn::BLstm> layer1, layer2;
  std::shared_ptr<nn::LayerNorm> norm;
  std::shared_ptr<nn::Linear> out;
};

void build_blstm_tagger(nn::Builder& b) {
  const Dim time = Dim::spatial("time");
  const Dim in = Dim::feature("input", 9);
  const Dim classes = Dim::feature("classes", 2);
  nn::Tensor x = b.extern_data("data", {Dim::batch(), time, in});
  nn::Tensor y = b.extern_data("classes", {Dim::batch(), time}, ir::DType::kInt32, classes);
  auto model = b.set_root(std::make_shared<BlstmTagger>(in, Dim::feature("hidden", 16), classes));
  nn::Tensor logits = model->forward(x, time);
  logits.mark_as_output();
  nn::softmax_cross_entropy(logits, y).mark_as_loss("ce");
}

}  // namespace

ModelDef model_blstm_tagger() {
  ModelDef def;
  def.name = "blstm-tagger";
  def.description = "2-layer BLSTM (16+16 units, layer norm) frame tagger on Task12AXDataset";
  def.build = build_blstm_tagger;
  emit::TrainingSetup& t = def.training;
  t.train = emit::PyValue::dict({{"class", "Task12AXDataset"}, {"num_seqs", 1000}});
  t.dev = emit::PyValue::dict(
      {{"class", "Task12AXDataset"}, {"num_seqs", 100}, {"fixed_random_seed", 1}});
  t.learning_rate = 0.005;
  t.num_epochs = 5;
  return def;
}

}  // namespace retc::configs
