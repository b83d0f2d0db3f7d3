// Test models for parameter options and reparametrizations; the
// integration tests (tests/integration/test_params.py) read their values
// back from RETURNN. Variants share param paths, hence initial values.
#include "compiler/nn/modules.h"
#include "compiler/nn/parametrize.h"
#include "tests/tagging_io.h"
#include "tests/test_models.h"

namespace retc::testing {
namespace {

using ir::Dim;

emit::TrainingSetup sgd_training(double lr) {
  emit::TrainingSetup t;
  t.train = emit::PyValue::dict({{"class", "Task12AXDataset"}, {"num_seqs", 20}});
  t.dev = emit::PyValue::dict(
      {{"class", "Task12AXDataset"}, {"num_seqs", 5}, {"fixed_random_seed", 1}});
  t.optimizer = emit::PyValue::dict({{"class", "gradientdescent"}});  // TF1-native SGD
  t.learning_rate = lr;
  t.num_epochs = 1;
  return t;
}

using Io = TaggingIo;

// One big weight per init scheme, named by the scheme.
class Inits : public nn::Module {
 public:
  Inits(Dim in, Dim fan_in, Dim fan_out) : Module("inits") {
    auto big = [&](const char* name, ir::Initializer init) {
      auto m = register_module(name, std::make_shared<nn::Linear>(fan_in, fan_out, false));
      m->weight().set_initial(init);
      return m;
    };
    big("glorot_uniform", ir::Initializer::glorot_uniform());
    big("glorot_normal", ir::Initializer::glorot_normal());
    big("he_normal", ir::Initializer::he_normal());
    big("he_uniform", ir::Initializer::he_uniform());
    big("vs_fan_out_normal",
        ir::Initializer::variance_scaling(0.5, ir::FanMode::kFanOut, ir::Distribution::kNormal));
    big("vs_fan_in_truncated", ir::Initializer::variance_scaling(
                                   3.0, ir::FanMode::kFanIn, ir::Distribution::kTruncatedNormal));
    big("normal", ir::Initializer::normal(0.3, 0.2));
    big("uniform", ir::Initializer::uniform(-0.1, 0.3));
    big("constant", ir::Initializer::constant(0.7));
    subgraph = big("subgraph", ir::Initializer::constant(0.0));
    out = register_module("out", std::make_shared<nn::Linear>(in, Dim::feature("classes", 3)));
  }
  std::shared_ptr<nn::Linear> subgraph, out;
};

void build_inits(nn::Builder& b) {
  Io io(b);
  Dim fan_in = Dim::feature("fan_in", 200), fan_out = Dim::feature("fan_out", 300);
  auto m = std::make_shared<Inits>(io.in, fan_in, fan_out);
  io.classes = m->out->out_dim();
  io.y = b.extern_data("targets", {Dim::batch(), io.time}, ir::DType::kInt32, io.classes);
  b.set_root(m);
  // A user's param-init subgraph: 2·N(0, 1) + 1.
  nn::Tensor init =
      nn::seeded_random_normal(b, {fan_in, fan_out}, 0.0, 1.0, 7) * nn::constant(b, 2.0) +
      nn::constant(b, 1.0);
  m->subgraph->weight().set_initial(init);
  io.finish(m->out->forward(io.x));
}

// lin: the trained layer; decayed: a weight whose gradient is held at zero.
class TwoLinear : public nn::Module {
 public:
  TwoLinear(Dim in, Dim out) : Module("two") {
    lin = register_module("lin", std::make_shared<nn::Linear>(in, out));
    decayed = register_module("decayed", std::make_shared<nn::Linear>(in, out, false));
  }
  std::shared_ptr<nn::Linear> lin, decayed;
};

template <nn::WeightDecayMode kMode>
void build_weight_decay(nn::Builder& b) {
  Io io(b);
  auto m = b.set_root(std::make_shared<TwoLinear>(io.in, io.classes));
  m->decayed->weight().set_weight_decay(0.01, kMode);
  io.finish(m->lin->forward(io.x) + m->decayed->forward(io.x) * nn::constant(b, 0.0));
}

enum class Opt { kPlain, kLrMult, kClip, kFrozen };

template <Opt kOpt>
void build_opt(nn::Builder& b) {
  Io io(b);
  auto lin = std::make_shared<nn::Linear>(io.in, io.classes);
  switch (kOpt) {
    case Opt::kPlain:
      break;
    case Opt::kLrMult:
      lin->weight().set_lr_multiplier(3.0);
      break;
    case Opt::kClip:
      lin->weight().set_gradient_clip(0.01);
      break;
    case Opt::kFrozen:
      lin->weight().set_trainable(false);
      break;
  }
  b.set_root(lin);
  io.finish(lin->forward(io.x));
}

// `out` reads its weight twice (two consumers of one derived weight).
class WnNet : public nn::Module {
 public:
  WnNet(Dim in, Dim hidden, Dim classes) : Module("wn_net") {
    ff1 = register_module("ff1", std::make_shared<nn::Linear>(in, hidden));
    ff2 = register_module("ff2", std::make_shared<nn::Linear>(in, hidden));
    out = register_module("out", std::make_shared<nn::Linear>(hidden, classes));
  }
  nn::Tensor forward(const nn::Tensor& x) const {
    auto s = enter(x);
    return out->forward(nn::tanh(ff1->forward(x))) + out->forward(nn::tanh(ff2->forward(x)));
  }
  std::shared_ptr<nn::Linear> ff1, ff2, out;
};

enum class Rep { kPlain, kWeightNorm, kDropout, kNoise };

template <Rep kRep>
void build_rep(nn::Builder& b) {
  Io io(b);
  auto m = std::make_shared<WnNet>(io.in, Dim::feature("hidden", 4), io.classes);
  switch (kRep) {
    case Rep::kPlain:
      break;
    case Rep::kWeightNorm:
      nn::weight_norm(*m->out, "weight");
      nn::weight_norm(*m->ff1, "weight");
      break;
    case Rep::kDropout:
      nn::weight_dropout(*m->out, "weight", 0.5);
      break;
    case Rep::kNoise:
      nn::weight_noise(*m->out, "weight", 0.3);
      break;
  }
  b.set_root(m);
  io.finish(m->forward(io.x));
}

// dtype and device scopes: params made inside get the innermost scope's
// settings unless set explicitly.
class Scoped : public nn::Module {
 public:
  Scoped(Dim in, Dim out, bool with_devices) : Module("scoped") {
    lin = register_module("lin", std::make_shared<nn::Linear>(in, out));
    nn::DTypeScope f64(ir::DType::kFloat64);
    if (!with_devices) {  // dtypes only
      double_outer = register_parameter("double_outer", {in}, ir::ParamKind::kAuxiliary,
                                        ir::Initializer::constant(1.0));
      double_normal = register_parameter("double_normal", {in, out}, ir::ParamKind::kWeight);
      return;
    }
    nn::DeviceScope outer("CPU:0");
    double_outer = register_parameter("double_outer", {in}, ir::ParamKind::kAuxiliary,
                                      ir::Initializer::constant(1.0));
    {
      nn::DeviceScope inner("CPU");
      double_inner = register_parameter("double_inner", {in}, ir::ParamKind::kAuxiliary,
                                        ir::Initializer::constant(2.0));
      explicit_device = register_parameter("explicit_device", {in}, ir::ParamKind::kAuxiliary,
                                           ir::Initializer::constant(3.0));
      explicit_device.set_device("CPU:0");
    }
  }
  std::shared_ptr<nn::Linear> lin;
  nn::Parameter double_outer, double_inner, explicit_device, double_normal;
};

template <bool kWithDevices>
void build_scoped(nn::Builder& b) {
  Io io(b);
  auto m = b.set_root(std::make_shared<Scoped>(io.in, io.classes, kWithDevices));
  io.finish(m->lin->forward(io.x));
}

// logits = x·W_res + stochastic_depth over a square residual branch.
void build_stochastic_depth(nn::Builder& b) {
  Io io(b);
  auto m = b.set_root(std::make_shared<TwoLinear>(io.in, io.in));
  nn::Tensor h = nn::stochastic_depth(io.x, m->lin->forward(io.x), 0.5);
  h.mark_as_output("residual");
  nn::Tensor logits = nn::dot(h, nn::constant(b, 1.0, {io.in, io.classes}), {io.in});
  io.finish(logits);
}

enum class Grad { kPlain, kScaled, kStopped };

template <Grad kGrad>
void build_grad(nn::Builder& b) {
  Io io(b);
  auto m = b.set_root(std::make_shared<TwoLinear>(io.in, io.classes));
  nn::Tensor y = m->lin->forward(io.x);
  if (kGrad == Grad::kScaled) y = nn::scale_gradient(y, 0.25);
  if (kGrad == Grad::kStopped) y = nn::stop_gradient(y);
  io.finish(y + m->decayed->forward(io.x));
}

}  // namespace

std::vector<ModelDef> param_test_models() {
  auto def = [](std::string name, void (*build)(nn::Builder&)) {
    return ModelDef{std::move(name), "parameter options test model", build, sgd_training(0.1)};
  };
  return {
      def("inits", build_inits),
      def("wd-decoupled", build_weight_decay<nn::WeightDecayMode::kDecoupled>),
      def("wd-coupled", build_weight_decay<nn::WeightDecayMode::kCoupled>),
      def("opt-plain", build_opt<Opt::kPlain>),
      def("opt-lr-mult", build_opt<Opt::kLrMult>),
      def("opt-clip", build_opt<Opt::kClip>),
      def("opt-frozen", build_opt<Opt::kFrozen>),
      def("rep-plain", build_rep<Rep::kPlain>),
      def("rep-weight-norm", build_rep<Rep::kWeightNorm>),
      def("rep-dropout", build_rep<Rep::kDropout>),
      def("rep-noise", build_rep<Rep::kNoise>),
      def("scoped", build_scoped<true>),
      def("scoped-dtype", build_scoped<false>),
      def("stochastic-depth", build_stochastic_depth),
      def("grad-plain", build_grad<Grad::kPlain>),
      def("grad-scaled", build_grad<Grad::kScaled>),
      def("grad-stopped", build_grad<Grad::kStopped>),
  };
}

}  // namespace retc::testing
