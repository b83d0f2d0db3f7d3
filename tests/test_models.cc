#include "tests/test_models.h"

#include <cmath>
#include <map>

#include "absl/strings/str_cat.h"
#include "compiler/nn/modules.h"
#include "configs/bundled.h"

namespace retc::testing {
namespace {

using ir::Dim;

// Shallow fusion with lstm-lm (#26): a bigram tagger of lstm-lm's task (a
// Linear from the one-hot symbol to the next symbol's logits, trained on its
// cross-entropy) fused with a language model "lm" of lstm-lm's network, its
// params frozen (loaded with `--preload lm=CKPT` from lstm-lm's checkpoint).
// Output: the fused log-probs of each frame's next symbol, teacher-forced,
// log_softmax(tagger) + lm_scale * log_softmax(lm); the search decodes
// time-synchronously, one symbol per frame, the LM fed its own choices.
void build_lm_fusion(nn::Builder& b, double lm_scale) {
  const Dim time = Dim::spatial("time"), vocab = Dim::feature("vocab", 12);
  nn::Tensor x = b.extern_data("data", {Dim::batch(), time, vocab});
  nn::Tensor y = b.extern_data("classes", {Dim::batch(), time}, ir::DType::kInt32, vocab);
  struct Net : nn::Module {
    explicit Net(Dim vocab) : Module("lm_fusion") {
      tagger = register_module("tagger", std::make_shared<nn::Linear>(vocab, vocab));
      lm =
          register_module("lm", std::make_shared<configs::LstmLm>(vocab, Dim::feature("embed", 32),
                                                                  Dim::feature("hidden", 64), 0.1));
      lm->apply_params({}, [](const std::string&, nn::ParamSetter& p) { p.set_trainable(false); });
    }
    std::shared_ptr<nn::Linear> tagger;
    std::shared_ptr<configs::LstmLm> lm;
  };
  auto m = b.set_root(std::make_shared<Net>(vocab));
  const nn::Tensor scale = nn::constant(b, lm_scale);
  nn::Tensor logits = m->tagger->forward(x);
  nn::softmax_cross_entropy(logits, y).mark_as_loss("ce");
  nn::add(nn::log_softmax(logits, vocab),
          nn::mul(scale, nn::log_softmax(m->lm->forward(x, time), vocab)))
      .mark_as_output("output");
  nn::Loop loop(b, time);
  nn::Tensor prev =
      loop.state(nn::sparse_constant(b, 0, vocab, {Dim::batch()}, {x}), {Dim::batch()});
  const Dim hidden = m->lm->lstm->out_dim();
  nn::LstmState state{loop.state(nn::constant(b, 0.0, {hidden}), {Dim::batch(), hidden}),
                      loop.state(nn::constant(b, 0.0, {hidden}), {Dim::batch(), hidden})};
  nn::LstmState before = state;
  nn::Tensor lm_log_probs = m->lm->step(prev, state);
  nn::Tensor fused = nn::add(nn::log_softmax(m->tagger->forward(loop.unstack(x)), vocab),
                             nn::mul(scale, lm_log_probs));
  nn::Tensor label = loop.choice(fused, vocab);
  loop.next(prev, label);
  loop.next(before.h, state.h);
  loop.next(before.c, state.c);
  loop.end();
  loop.stack(label).mark_as_search_output();
}

std::map<std::string, int>& lines() {
  static std::map<std::string, int> kLines;
  return kLines;
}

}  // namespace

emit::TrainingSetup small_training() {
  emit::TrainingSetup t;
  t.train = emit::PyValue::dict({{"class", "Task12AXDataset"}, {"num_seqs", 20}});
  t.dev = emit::PyValue::dict(
      {{"class", "Task12AXDataset"}, {"num_seqs", 5}, {"fixed_random_seed", 1}});
  return t;
}

namespace {

emit::TrainingSetup tiny_training() {
  emit::TrainingSetup t = small_training();
  t.num_epochs = 1;
  return t;
}

class Tagger : public nn::Module {
 public:
  Tagger(Dim in, Dim hidden, Dim classes) : Module("tagger") {
    ff = register_module("ff", std::make_shared<nn::Linear>(in, hidden));
    out = register_module("out", std::make_shared<nn::Linear>(hidden, classes));
  }
  nn::Tensor forward(const nn::Tensor& x) const {
    auto scope = enter(x);
    return out->forward(nn::tanh(ff->forward(x)));
  }
  std::shared_ptr<nn::Linear> ff, out;
};

// A two-layer feed-forward tagger on 12AX data.
// The tiny tagger on 12ax's data; returns the data and the classes' dim.
std::pair<nn::Tensor, Dim> build_tiny_tagger(nn::Builder& b) {
  Dim time = Dim::spatial("time");
  Dim in = Dim::feature("input", 9);
  Dim classes = Dim::feature("classes", 2);
  auto x = b.extern_data("data", {Dim::batch(), time, in});
  auto y = b.extern_data("classes", {Dim::batch(), time}, ir::DType::kInt32, classes);
  auto m = b.set_root(std::make_shared<Tagger>(in, Dim::feature("hidden", 8), classes));
  auto logits = m->forward(x);
  logits.mark_as_output();
  nn::softmax_cross_entropy(logits, y).mark_as_loss("ce");
  return {x, classes};
}

void build_tiny(nn::Builder& b) { build_tiny_tagger(b); }

// The tiny tagger, and a search whose log-probs are fixed, so that length
// normalization decides the hypothesis (search_length_norm.sh): over the
// labels {0: the end, 1}, the first frame has p(0) = 0.4, every later one
// p(0) = 0.1 (a state whose next value is a constant from outside the loop:
// on TF, a layer kept in the loop); at most 5 frames. By the sum of log-probs "0" is best (-0.92;
// five 1s: -0.93); by the sum / length five 1s are (-0.19).
void build_length_norm_search(nn::Builder& b) {
  const auto [x, classes] = build_tiny_tagger(b);
  nn::Loop loop(b, Dim::spatial("out_time"));
  nn::Tensor later = loop.state(nn::constant(b, 0.0, {Dim::batch()}, {x}), {Dim::batch()});
  nn::Tensor first = nn::constant(b, {std::log(0.4), std::log(0.6)}, classes);
  nn::Tensor next = nn::constant(b, {std::log(0.1), std::log(0.9)}, classes);
  nn::Tensor log_probs =
      nn::where(nn::compare(later, nn::constant(b, 0.5), "greater"), next, first);
  nn::Tensor label = loop.choice(log_probs, classes);
  loop.next(later, nn::constant(b, 1.0, {Dim::batch()}, {x}));
  loop.end(nn::compare(label, nn::cast(nn::constant(b, 0.0), ir::DType::kInt32), "equal"), 5);
  loop.stack(label).mark_as_search_output();
}

// A deep model: a chain of 400 residual tanh steps without params of their
// own (h + tanh(h)), each depending on the one before (814 layers in its TF
// net dict). RETURNN's TF network constructs layers recursively, through
// their inputs: it fails with Python's default recursion limit of 1,000
// (retc_runtime.py raises it).
void build_deep_chain(nn::Builder& b) {
  Dim time = Dim::spatial("time");
  Dim in = Dim::feature("input", 9);
  Dim hidden = Dim::feature("hidden", 4);
  Dim classes = Dim::feature("classes", 2);
  auto x = b.extern_data("data", {Dim::batch(), time, in});
  auto y = b.extern_data("classes", {Dim::batch(), time}, ir::DType::kInt32, classes);
  struct Chain : nn::Module {
    Chain(Dim in, Dim hidden, Dim classes) : Module("chain") {
      first = register_module("first", std::make_shared<nn::Linear>(in, hidden));
      last = register_module("last", std::make_shared<nn::Linear>(hidden, classes));
    }
    std::shared_ptr<nn::Linear> first, last;
  };
  auto chain = b.set_root(std::make_shared<Chain>(in, hidden, classes));
  nn::Tensor h = chain->first->forward(x);
  for (int i = 0; i < 400; ++i) h = h + nn::tanh(h);
  h = chain->last->forward(h);
  h.mark_as_output();
  nn::softmax_cross_entropy(h, y).mark_as_loss("ce");
}

// Max pooling with a stride above its window (frames skipped): the tf target
// refuses it (tf.nn.pool does), torch pools.
void build_pool_skips(nn::Builder& b) {
  Dim time = Dim::spatial("time");
  auto x = b.extern_data("data", {Dim::batch(), time, Dim::feature("input", 9)});
  b.set_root(std::make_shared<nn::Module>("net"));
  nn::pool(x, "max", {time}, {1}, {2}).mark_as_output();  // skips every other frame
}

// Extern data without a feature dim (raw audio samples, [B, time]).
void build_raw_samples(nn::Builder& b) {
  Dim time = Dim::spatial("time");
  auto x = b.extern_data("data", {Dim::batch(), time});  // raw samples: no feature dim
  b.set_root(std::make_shared<nn::Module>("net"));
  nn::tanh(x).mark_as_output();
}

// A square weight [hidden, hidden] between two other layers.
void build_square(nn::Builder& b) {
  Dim time = Dim::spatial("time");
  Dim in = Dim::feature("input", 9);
  Dim hidden = Dim::feature("hidden", 6);
  Dim classes = Dim::feature("classes", 2);
  struct Net : nn::Module {
    Net(Dim in, Dim hidden, Dim classes) : Module("net") {
      ff = register_module("ff", std::make_shared<nn::Linear>(in, hidden));
      sq = register_module("sq", std::make_shared<nn::Linear>(hidden, hidden));
      out = register_module("out", std::make_shared<nn::Linear>(hidden, classes));
    }
    std::shared_ptr<nn::Linear> ff, sq, out;
  };
  auto x = b.extern_data("data", {Dim::batch(), time, in});
  auto y = b.extern_data("classes", {Dim::batch(), time}, ir::DType::kInt32, classes);
  auto net = b.set_root(std::make_shared<Net>(in, hidden, classes));
  nn::Tensor h = nn::tanh(net->ff->forward(x));
  h = h + nn::tanh(net->sq->forward(h));
  nn::Tensor logits = net->out->forward(h);
  logits.mark_as_output();
  nn::softmax_cross_entropy(logits, y).mark_as_loss("ce");
}

// The output layer's in_dim (hidden) does not match its input (the features).
void build_bad_dims(nn::Builder& b) {
  Dim time = Dim::spatial("time");
  Dim feat = Dim::feature("feat", 512);
  Dim hidden = Dim::feature("hidden", 256);
  auto x = b.extern_data("data", {Dim::batch(), time, feat});
  auto lin = b.set_root(std::make_shared<nn::Linear>(hidden, Dim::feature("out", 3)));
  lines()["bad-dims"] = __LINE__ + 1;
  lin->forward(x).mark_as_output();
}

// Two losses with one name.
void build_duplicate_loss(nn::Builder& b) {
  Dim time = Dim::spatial("time");
  Dim in = Dim::feature("input", 9);
  Dim classes = Dim::feature("classes", 2);
  auto x = b.extern_data("data", {Dim::batch(), time, in});
  auto y = b.extern_data("classes", {Dim::batch(), time}, ir::DType::kInt32, classes);
  auto lin = b.set_root(std::make_shared<nn::Linear>(in, classes));
  auto logits = lin->forward(x);
  nn::softmax_cross_entropy(logits, y).mark_as_loss("ce");
  lines()["duplicate-loss"] = __LINE__ + 1;
  nn::softmax_cross_entropy(logits, y).mark_as_loss("ce");
}

// A module used in forward but never registered under the root.
void build_unregistered(nn::Builder& b) {
  Dim time = Dim::spatial("time");
  Dim in = Dim::feature("input", 9);
  auto x = b.extern_data("data", {Dim::batch(), time, in});
  b.set_root(std::make_shared<nn::Linear>(in, in));
  auto stray = std::make_shared<nn::Linear>(in, Dim::feature("out", 2));
  lines()["unregistered-param"] = __LINE__ + 1;
  stray->forward(x).mark_as_output();
}

// An initial value computed from data: not possible once, before training.
void build_init_reads_data(nn::Builder& b) {
  Dim time = Dim::spatial("time");
  Dim in = Dim::feature("input", 9), out = Dim::feature("out", 2);
  auto x = b.extern_data("data", {Dim::batch(), time, in});
  auto aux = b.extern_data("aux", {Dim::batch(), time, out});
  auto lin = b.set_root(std::make_shared<nn::Linear>(in, out));
  lines()["init-reads-data"] = __LINE__ + 1;
  nn::Tensor init = nn::dot(x, aux, {Dim::batch(), time});  // [in, out], from data
  lin->weight().set_initial(init);
  lin->forward(x).mark_as_output();
}

// Names that would break out of a Python string if not escaped.
void build_hostile_names(nn::Builder& b) {
  Dim time = Dim::spatial("ti\"me\\\n'); import os #");
  Dim in = Dim::feature("input", 9);
  Dim hidden = Dim::feature("h\u00e9idd\u00ebn \u2603 \xff", 4);
  Dim classes = Dim::feature("classes\"\"\"", 2);
  auto x = b.extern_data("data", {Dim::batch(), time, in});
  auto y = b.extern_data("classes", {Dim::batch(), time}, ir::DType::kInt32, classes);
  auto m = b.set_root(std::make_shared<Tagger>(in, hidden, classes));
  auto logits = m->forward(x);
  logits.mark_as_output();
  nn::softmax_cross_entropy(logits, y).mark_as_loss("ce");
}

}  // namespace

int mistake_line(const std::string& name) {
  // Building a model records its mistake line; build them all once.
  if (lines().empty()) {
    for (const ModelDef& m : test_models()) (void)build_model(m);
  }
  auto it = lines().find(name);
  return it == lines().end() ? 0 : it->second;
}

std::vector<ModelDef> test_models() {
  auto def = [](std::string name, std::string desc, void (*build)(nn::Builder&)) {
    return ModelDef{std::move(name), std::move(desc), build, tiny_training()};
  };
  // Trained on RETURNN's random data (DummyGenericDataset), which cannot make
  // data without a feature dim: an error at the extern_data line.
  ModelDef raw_samples =
      def("raw-samples", "extern data without a feature dim ([B, time]) and random training data",
          build_raw_samples);
  raw_samples.training.train = emit::PyValue::dict(
      {{"class", "DummyGenericDataset"},
       {"data_template", emit::PyValue::ref("extern_data")},
       {"num_seqs", 4},
       {"seq_lens", emit::PyValue::dict({{"data", emit::PyValue::tuple({10, 20})}})}});
  ModelDef hostile =
      def("hostile-names", "dims named to break out of strings", build_hostile_names);
  hostile.training.train.set("comment\"'\\\n", "x\"; import os; os.system('true') #");
  std::vector<ModelDef> models = {
      def("tiny", "two-layer feed-forward tagger on 12AX data", build_tiny),
      def("square", "a residual square [hidden, hidden] weight", build_square),
      def("bad-dims", "a Linear whose in_dim does not match its input", build_bad_dims),
      def("duplicate-loss", "two losses named 'ce'", build_duplicate_loss),
      def("init-reads-data", "an initial value computed from data", build_init_reads_data),
      def("unregistered-param", "a module used in forward but not registered", build_unregistered),
      def("lab/tiny", "tiny, named with a '/' (a lab's model path)", build_tiny),
      raw_samples,
      def("pool-skips", "max pooling with a stride above its window", build_pool_skips),
      def("deep-chain", "400 residual tanh steps in a chain (RETURNN's recursion depth)",
          build_deep_chain),
      std::move(hostile),
  };
  // 12ax with a dataset option RETURNN rejects.
  ModelDef bad_dataset = def("bad-dataset", "a dataset option RETURNN rejects", build_tiny);
  bad_dataset.training.train.set("no_such_option", 1);
  models.push_back(std::move(bad_dataset));
  models.push_back(def("length-norm-search",
                       "the tiny tagger and a fixed search that length normalization decides",
                       build_length_norm_search));
  // 12ax with longer epochs and per-step log lines, to interrupt mid-epoch.
  ModelDef slow = derive(
      *with_options(configs::model_12ax(), {"train_seqs=1500", "epochs=4"}), [](ModelDef& d) {
        d.name = "slow-12ax";
        d.description = "12ax, 4 epochs of 1500 sequences (150 steps), per-step log lines";
        d.training.extra.emplace_back("log_verbosity", 5);
      });
  models.push_back(std::move(slow));
  // 12ax with the typed training-setup options: a warm-up, newbob over
  // sub-epochs, clipping, gradient noise and accumulation, chunking, a length limit.
  ModelDef setup = derive(*with_options(configs::model_12ax(), {"epochs=4"}), [](ModelDef& d) {
    d.name = "setup-options";
    d.description = "12ax with warm-up, newbob_multi_epoch, clipping, noise, accumulation, chunks";
    emit::TrainingSetup& t = d.training;
    t.learning_rates = emit::warmup_learning_rates(0.002, 0.006, 2);
    t.lr_control.kind = emit::LearningRateControl::Kind::kNewbobMultiEpoch;
    t.lr_control.multi_num_epochs = 2;
    t.lr_control.decay = 0.7;
    t.lr_control.min_learning_rate = 0.001;
    t.lr_control.relative_to_learning_rate = true;
    t.gradient_clip = 5.0;
    t.gradient_clip_global_norm = 10.0;
    t.gradient_noise = 0.01;
    t.accumulate_gradients = 2;
    t.chunking = "20:10";
    t.max_seq_length = {{"classes", 200}};
  });
  models.push_back(std::move(setup));
  // conformer-ctc-grow for 3 epochs, the third (the first of stage 1) with
  // learning rate 0: its checkpoint shows what the grown network started from.
  ModelDef frozen =
      derive(*with_options(configs::model_conformer_ctc_grow(), {"epochs=3"}), [](ModelDef& d) {
        d.name = "grow-frozen";
        d.description = "conformer-ctc-grow, 3 epochs, the third with learning rate 0";
        d.training.learning_rates = {0.001, 0.001, 0.0};
      });
  models.push_back(std::move(frozen));
  ModelDef fusion = configs::model_lstm_lm();  // its data: TaskXmlModelingDataset
  fusion.name = "lm-fusion";
  fusion.description = "a bigram tagger fused with lstm-lm's network (--preload lm=CKPT)";
  fusion.options = {
      float_option("lm_scale", 0.5, "the LM's weight in the fused log-probs", 0.0, 10.0)};
  fusion.configure = [](ModelDef& d, const OptionValues& o) {
    d.build = [s = o.get_float("lm_scale")](nn::Builder& b) { build_lm_fusion(b, s); };
  };
  models.push_back(configured(std::move(fusion)));
  for (ModelDef& m : param_test_models()) models.push_back(std::move(m));
  for (ModelDef& m : module_test_models()) models.push_back(std::move(m));
  for (ModelDef& m : rq_test_models()) models.push_back(std::move(m));
  for (ModelDef& m : random_test_models()) models.push_back(std::move(m));
  for (ModelDef& m : sweep_test_models()) models.push_back(std::move(m));
  for (ModelDef& m : fuzz_test_models()) models.push_back(std::move(m));
  for (ModelDef& m : bad_model_cases()) models.push_back(std::move(m));
  return models;
}

}  // namespace retc::testing
