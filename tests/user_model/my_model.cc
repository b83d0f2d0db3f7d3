// A model written outside the retc repo. `retc_add_model` turns this file
// into an executable with the whole retc CLI: list, compile, check, train,
// dump-ir, each with the model's options (--set NAME=VALUE).
#include <memory>

#include "compiler/nn/builder.h"
#include "compiler/nn/modules.h"
#include "tools/cli.h"

using retc::ir::Dim;
namespace nn = retc::nn;

// Two stacked LSTMs with a residual feed-forward layer in between.
class Stack : public nn::Module {
 public:
  Stack(Dim in, Dim hidden, Dim classes) : Module("stack") {
    lstm1 = register_module("lstm1", std::make_shared<nn::Lstm>(in, hidden));
    ff = register_module("ff", std::make_shared<nn::Linear>(hidden, hidden));
    lstm2 = register_module("lstm2", std::make_shared<nn::Lstm>(hidden, hidden));
    out = register_module("out", std::make_shared<nn::Linear>(hidden, classes));
  }
  nn::Tensor forward(const nn::Tensor& x, const Dim& time) const {
    auto scope = enter(x);
    nn::Tensor h = lstm1->forward(x, time);
    h = h + nn::relu(ff->forward(h));
    return out->forward(lstm2->forward(h, time));
  }
  std::shared_ptr<nn::Lstm> lstm1, lstm2;
  std::shared_ptr<nn::Linear> ff, out;
};

retc::ModelDef my_model() {
  retc::ModelDef def;
  def.name = "my-model";
  def.description = "two stacked LSTMs on 12AX";
  def.training.dev = retc::emit::PyValue::dict(
      {{"class", "Task12AXDataset"}, {"num_seqs", 50}, {"fixed_random_seed", 1}});
  def.training.num_epochs = 2;
  // Options: `./my_model train my-model --set hidden=32 --set learning_rate=0.005`.
  def.options = {retc::int_option("hidden", 12, "LSTM units", 1),
                 retc::int_option("train_seqs", 200, "training sequences per epoch", 1)};
  for (retc::ModelOption& o : retc::training_options(def.training)) def.options.push_back(o);
  def.configure = [](retc::ModelDef& d, const retc::OptionValues& o) {
    d.build = [hidden_units = o.get_int("hidden")](nn::Builder& b) {
      Dim time = Dim::spatial("time"), in = Dim::feature("input", 9);
      Dim classes = Dim::feature("classes", 2), hidden = Dim::feature("hidden", hidden_units);
      auto x = b.extern_data("data", {Dim::batch(), time, in});
      auto y = b.extern_data("classes", {Dim::batch(), time}, retc::ir::DType::kInt32, classes);
      auto model = b.set_root(std::make_shared<Stack>(in, hidden, classes));
      auto logits = model->forward(x, time);
      logits.mark_as_output();
      nn::softmax_cross_entropy(logits, y).mark_as_loss("ce");
    };
    d.training.train = retc::emit::PyValue::dict(
        {{"class", "Task12AXDataset"}, {"num_seqs", o.get_int("train_seqs")}});
    retc::apply_training_options(o, d.training);
  };
  return retc::configured(def);
}

std::vector<retc::ModelDef> my_models() { return {my_model()}; }

int main(int argc, char** argv) { return retc::run_cli(argc, argv, my_models); }
