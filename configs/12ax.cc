// 12ax: an LSTM frame classifier on RETURNN's Task12AXDataset (the 12AX
// working-memory task: 9 input symbols, 2 classes per frame).
#include "configs/bundled.h"
#include "configs/model_12ax.h"

namespace retc::configs {

using ir::Dim;

Model12ax::Model12ax(Dim in, Dim hidden, Dim classes) : Module("model_12ax") {
  lstm = register_module("lstm", std::make_shared<nn::Lstm>(in, hidden));
  out = register_module("out", std::make_shared<nn::Linear>(hidden, classes));
}

nn::Tensor Model12ax::forward(const nn::Tensor& input, const Dim& time) const {
  return call(input, std::source_location::current(), [&](const nn::Tensor& x) {
    nn::Tensor h = lstm->forward(x, time);
    h = nn::dropout(h, 0.1);
    return out->forward(h);
  });
}

void build_12ax(nn::Builder& b, const std::function<void(Model12ax&)>& customize) {
  const Dim time = Dim::spatial("time");
  const Dim in = Dim::feature("input", 9);
  const Dim classes = Dim::feature("classes", 2);
  const Dim hidden = Dim::feature("hidden", 10);
  nn::Tensor x = b.extern_data("data", {Dim::batch(), time, in});
  nn::Tensor targets = b.extern_data("classes", {Dim::batch(), time}, ir::DType::kInt32, classes);
  auto model = std::make_shared<Model12ax>(in, hidden, classes);
  if (customize) customize(*model);
  b.set_root(model);
  nn::Tensor logits = model->forward(x, time);
  logits.mark_as_output("output");
  nn::softmax_cross_entropy(logits, targets).mark_as_loss("ce");
}

ModelDef model_12ax() {
  ModelDef def;
  def.name = "12ax";
  def.description = "LSTM (10 units) frame classifier on RETURNN's Task12AXDataset";
  def.build = [](nn::Builder& b) { build_12ax(b); };
  emit::TrainingSetup& t = def.training;
  t.train = emit::PyValue::dict({{"class", "Task12AXDataset"}, {"num_seqs", 1000}});
  t.dev = emit::PyValue::dict(
      {{"class", "Task12AXDataset"}, {"num_seqs", 100}, {"fixed_random_seed", 1}});
  t.batch_size = 5000;
  t.max_seqs = 10;
  t.optimizer = emit::PyValue::dict({{"class", "adam"}});
  t.learning_rate = 0.01;
  t.num_epochs = 5;
  return def;
}

}  // namespace retc::configs
