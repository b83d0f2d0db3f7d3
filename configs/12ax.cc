// 12ax: an LSTM frame classifier on RETURNN's Task12AXDataset (the 12AX
// working-memory task: 9 input symbols, 2 classes per frame).
#include "configs/bundled.h"
#include "configs/model_12ax.h"

namespace retc::configs {

using ir::Dim;

Model12ax::Model12ax(Dim in, Dim hidden, Dim classes, double dropout)
    : Module("model_12ax"), dropout_(dropout) {
  lstm = register_module("lstm", std::make_shared<nn::Lstm>(in, hidden));
  out = register_module("out", std::make_shared<nn::Linear>(hidden, classes));
}

nn::Tensor Model12ax::forward(const nn::Tensor& input, const Dim& time) const {
  return call(input, std::source_location::current(), [&](const nn::Tensor& x) {
    nn::Tensor h = lstm->forward(x, time);
    h = nn::dropout(h, dropout_);
    return out->forward(h);
  });
}

void build_12ax(nn::Builder& b, int64_t hidden_units, double dropout,
                const std::function<void(Model12ax&)>& customize) {
  const Dim time = Dim::spatial("time");
  const Dim in = Dim::feature("input", 9);
  const Dim classes = Dim::feature("classes", 2);
  const Dim hidden = Dim::feature("hidden", hidden_units);
  nn::Tensor x = b.extern_data("data", {Dim::batch(), time, in});
  nn::Tensor targets = b.extern_data("classes", {Dim::batch(), time}, ir::DType::kInt32, classes);
  auto model = std::make_shared<Model12ax>(in, hidden, classes, dropout);
  if (customize) customize(*model);
  b.set_root(model);
  nn::Tensor logits = model->forward(x, time);
  logits.mark_as_output("output");
  nn::softmax_cross_entropy(logits, targets).mark_as_loss("ce");
}

emit::PyValue task_12ax(int64_t num_seqs, bool fixed) {
  emit::PyValue d = emit::PyValue::dict({{"class", "Task12AXDataset"}, {"num_seqs", num_seqs}});
  if (fixed) d.set("fixed_random_seed", 1);
  return d;
}

ModelDef model_12ax_with(
    std::function<std::function<void(Model12ax&)>(const OptionValues&)> customize,
    std::vector<ModelOption> more_options) {
  ModelDef def;
  def.name = "12ax";
  def.description = "LSTM (10 units) frame classifier on RETURNN's Task12AXDataset";
  emit::TrainingSetup& t = def.training;
  t.dev = task_12ax(100, true);
  t.batch_size = 5000;
  t.max_seqs = 10;
  t.optimizer = emit::PyValue::dict({{"class", "adam"}});
  t.learning_rate = 0.01;
  t.num_epochs = 5;
  def.options = {int_option("hidden", 10, "LSTM units", 1),
                 float_option("dropout", 0.1, "dropout on the LSTM's output", 0.0, 1.0),
                 int_option("train_seqs", 1000, "training sequences per epoch", 1)};
  for (ModelOption& o : training_options(t)) def.options.push_back(std::move(o));
  for (ModelOption& o : more_options) def.options.push_back(std::move(o));
  def.configure = [customize](ModelDef& d, const OptionValues& o) {
    d.build = [hidden = o.get_int("hidden"), dropout = o.get_float("dropout"),
               custom = customize ? customize(o) : std::function<void(Model12ax&)>()](
                  nn::Builder& b) { build_12ax(b, hidden, dropout, custom); };
    d.training.train = task_12ax(o.get_int("train_seqs"), false);
    apply_training_options(o, d.training);
  };
  return configured(std::move(def));
}

ModelDef model_12ax() { return model_12ax_with(); }

}  // namespace retc::configs
