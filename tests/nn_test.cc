// Unit tests of the model API: module tree, params, errors at the user's line.
#include <catch2/catch.hpp>

#include "compiler/nn/error.h"
#include "compiler/nn/modules.h"
#include "compiler/nn/parametrize.h"
#include "emit/model.h"
#include "emit/target.h"
#include "emit/tf/target.h"
#include "tests/test_models.h"

namespace retc::nn {
namespace {

using ir::Dim;

class Block : public Module {
 public:
  Block(Dim d) : Module("block") {
    ff = register_module("ff", std::make_shared<Linear>(d, d));
    scale =
        register_parameter("scale", {d}, ir::ParamKind::kNormScale, ir::Initializer::constant(1.0));
  }
  std::shared_ptr<Linear> ff;
  Parameter scale;
};

class Net : public Module {
 public:
  Net(Dim d) : Module("net") {
    first = register_module("first", std::make_shared<Block>(d));
    second = register_module("second", std::make_shared<Block>(d));
  }
  std::shared_ptr<Block> first, second;
};

TEST_CASE("named_parameters: own params first, then children's, with dotted paths") {
  Net net(Dim::feature("d", 4));
  std::vector<std::string> names;
  for (const auto& [n, p] : net.named_parameters()) names.push_back(n);
  CHECK(names == std::vector<std::string>{"first.scale", "first.ff.weight", "first.ff.bias",
                                          "second.scale", "second.ff.weight", "second.ff.bias"});
  std::vector<std::string> mods;
  for (const auto& [n, m] : net.named_modules()) mods.push_back(n);
  CHECK(mods == std::vector<std::string>{"", "first", "first.ff", "second", "second.ff"});
}

TEST_CASE("Sequential names modules by index or by the name given; ParameterList by index") {
  const Dim a = Dim::feature("a", 3), c = Dim::feature("c", 2);
  Sequential seq;
  seq.append(std::make_shared<Linear>(a, a));
  seq.append(relu);
  seq.append("out", std::make_shared<Linear>(a, c));
  std::vector<std::string> names;
  for (const auto& [n, p] : seq.named_parameters()) names.push_back(n);
  CHECK(names == std::vector<std::string>{"0.weight", "0.bias", "out.weight", "out.bias"});
  ParameterList list;
  list.append({a}, ir::ParamKind::kNormScale);
  Parameter& second = list.append({a, c});
  CHECK(list.size() == 2);
  CHECK(second.dims() == std::vector<Dim>{a, c});
  CHECK(list.at(0).kind() == ir::ParamKind::kNormScale);
  names.clear();
  for (const auto& [n, p] : list.named_parameters()) names.push_back(n);
  CHECK(names == std::vector<std::string>{"0", "1"});
}

TEST_CASE("clone makes a module of the same type with params of its own and their options") {
  const Dim a = Dim::feature("a", 3), c = Dim::feature("c", 2);
  auto lin = make<Linear>(a, c);
  lin->weight().set_weight_decay(0.5);
  lin->bias().set_trainable(false);
  int calls = 0;
  lin->register_forward_hook([&calls](const Module&, const Tensor&, const Tensor& y) {
    ++calls;
    return y;
  });
  auto copy = clone(lin);
  CHECK(copy != lin);
  CHECK(copy->weight().identity() != lin->weight().identity());
  CHECK(copy->weight().dims() == std::vector<Dim>{a, c});
  CHECK(copy->weight().ir().options.weight_decay.value == 0.5);
  CHECK_FALSE(copy->bias().ir().options.trainable);
  auto twice = clone(copy);  // a clone clones too
  CHECK(twice->weight().ir().options.weight_decay.value == 0.5);
  // Not made by make: no constructor arguments to make another.
  auto plain = std::make_shared<Linear>(a, c);
  try {
    clone(plain);
    FAIL("expected an error");
  } catch (const ModelError& e) {
    CHECK_THAT(std::string(e.status().message()), Catch::Contains("was not made with nn::make"));
    CHECK_THAT(std::string(e.status().message()), Catch::Contains("nn_test.cc:"));
  }
  // A module registered after the constructor is not part of what clone makes.
  auto seq = make<Sequential>();
  seq->append(std::make_shared<Linear>(a, a));
  CHECK_THROWS_AS(clone(seq), ModelError);
}

TEST_CASE("apply visits modules post-order and can change param options") {
  Net net(Dim::feature("d", 4));
  std::vector<std::string> order;
  net.apply([&](Module& m) { order.push_back(m.type_name()); });
  CHECK(order == std::vector<std::string>{"linear", "block", "linear", "block", "net"});
  net.apply([](Module& m) {
    if (auto* lin = dynamic_cast<Linear*>(&m)) lin->bias().set_trainable(false);
  });
  for (const auto& [n, p] : net.named_parameters()) {
    CHECK(p.ir().options.trainable == (p.kind() != ir::ParamKind::kBias));
  }
}

TEST_CASE("options set after set_root reach the graph") {
  Dim d = Dim::feature("d", 4), t = Dim::spatial("t");
  ModelDef def{"m",
               "",
               [&](Builder& b) {
                 auto x = b.extern_data("data", {Dim::batch(), t, d});
                 auto net = b.set_root(std::make_shared<Net>(d));
                 net->first->ff->forward(x).mark_as_output();
                 net->first->ff->weight().set_initial(ir::Initializer::glorot_normal());
               },
               {}};
  auto g = build_model(def);
  REQUIRE(g.ok());
  CHECK(g->params()[1].path == "first.ff.weight");
  CHECK(g->params()[1].options.initial == ir::Initializer::glorot_normal());
}

TEST_CASE("a dim mismatch names the user's file:line and the module") {
  for (const ModelDef& m : testing::test_models()) {
    if (m.name != "bad-dims") continue;
    auto g = build_model(m);
    REQUIRE(!g.ok());
    std::string msg(g.status().message());
    CHECK_THAT(msg, Catch::Contains("test_models.cc:" +
                                    std::to_string(testing::mistake_line("bad-dims")) + ":"));
    CHECK_THAT(msg, Catch::Contains("error: linear '<root>': input dim 'feat'(512) does not match "
                                    "in_dim 'hidden'(256)"));
  }
}

TEST_CASE("model mistakes are user errors at the user's line") {
  for (const std::string name : {"duplicate-loss", "unregistered-param"}) {
    for (const ModelDef& m : testing::test_models()) {
      if (m.name != name) continue;
      auto g = emit::compile_model(m, emit::tf::target());
      INFO(name);
      REQUIRE(!g.ok());
      CHECK_THAT(
          std::string(g.status().message()),
          Catch::Contains("test_models.cc:" + std::to_string(testing::mistake_line(name)) + ":"));
    }
  }
}

TEST_CASE("invalid and duplicate member names are rejected") {
  Dim d = Dim::feature("d", 4);
  Module m("m");
  CHECK_THROWS_AS(m.register_parameter("a.b", {d}, ir::ParamKind::kWeight), ModelError);
  CHECK_THROWS_AS(m.register_parameter("", {d}, ir::ParamKind::kWeight), ModelError);
  m.register_parameter("w", {d}, ir::ParamKind::kWeight);
  CHECK_THROWS_AS(m.register_parameter("w", {d}, ir::ParamKind::kWeight), ModelError);
  CHECK_THROWS_AS(m.register_module("w", std::make_shared<Linear>(d, d)), ModelError);
  CHECK_THROWS_AS(m.register_parameter("t", {Dim::spatial("t")}, ir::ParamKind::kWeight),
                  ModelError);
  try {
    m.register_module("x/y", std::make_shared<Linear>(d, d));
    FAIL("expected an error");
  } catch (const ModelError& e) {
    CHECK_THAT(std::string(e.status().message()), Catch::Contains("nn_test.cc:"));
  }
}

TEST_CASE("extern data is checked") {
  ModelDef def{"m",
               "",
               [](Builder& b) {
                 b.extern_data("data", {Dim::feature("f", 3)});  // no batch dim
               },
               {}};
  auto g = build_model(def);
  REQUIRE(!g.ok());
  CHECK_THAT(std::string(g.status().message()), Catch::Contains("must start with the batch dim"));
}

TEST_CASE("pretty_print shows the module tree") {
  Net net(Dim::feature("d", 4));
  std::string s = net.pretty_print();
  CHECK_THAT(
      s, Catch::Contains("net\n  first: block\n    scale: ['d'(4)] norm-scale\n    ff: linear\n"));
}

}  // namespace
}  // namespace retc::nn

namespace retc::nn {
namespace {

using ir::Dim;

// Builds a model from `body` and returns its graph after the pipeline.
ir::Graph compiled(const std::function<void(Builder&)>& body) {
  auto g = emit::compile_model(ModelDef{"t", "", body, {}}, emit::tf::target());
  if (!g.ok()) FAIL(g.status().message());
  return *std::move(g);
}

const ir::Param& param_at(const ir::Graph& g, const std::string& path) {
  for (const ir::Param& p : g.params()) {
    if (p.path == path) return p;
  }
  FAIL("no param " << path);
  return g.params()[0];
}

struct Small {
  Dim t = Dim::spatial("t"), d = Dim::feature("d", 4), e = Dim::feature("e", 3);
};

TEST_CASE("precedence: apply_params beats module defaults") {
  Small s;
  auto g = compiled([&](Builder& b) {
    auto x = b.extern_data("data", {Dim::batch(), s.t, s.d});
    auto lin = std::make_shared<Linear>(s.d, s.e);
    lin->apply_params({ir::ParamKind::kWeight, ""}, [](const std::string&, ParamSetter& p) {
      p.set_initial(ir::Initializer::he_normal());
    });
    lin->apply_params({ir::ParamKind::kBias, ""}, [](const std::string&, ParamSetter& p) {
      p.set_initial(ir::Initializer::constant(0.5));
    });
    b.set_root(lin);
    lin->forward(x).mark_as_output();
  });
  CHECK(param_at(g, "weight").options.initial == ir::Initializer::he_normal());
  CHECK(param_at(g, "bias").options.initial == ir::Initializer::constant(0.5));
}

TEST_CASE("precedence: an explicit setting beats apply_params, before or after it") {
  Small s;
  auto g = compiled([&](Builder& b) {
    auto x = b.extern_data("data", {Dim::batch(), s.t, s.d});
    auto lin = std::make_shared<Linear>(s.d, s.e);
    lin->weight().set_weight_decay(0.1);  // explicit, before
    lin->apply_params({}, [](const std::string&, ParamSetter& p) {
      p.set_weight_decay(0.5).set_lr_multiplier(2.0).set_trainable(false);
    });
    lin->bias().set_lr_multiplier(4.0);  // explicit, after
    b.set_root(lin);
    lin->forward(x).mark_as_output();
  });
  CHECK(param_at(g, "weight").options.weight_decay.value == 0.1);
  CHECK(param_at(g, "bias").options.weight_decay.value == 0.5);
  CHECK(param_at(g, "weight").options.lr_multiplier == 2.0);
  CHECK(param_at(g, "bias").options.lr_multiplier == 4.0);
  CHECK(!param_at(g, "weight").options.trainable);
}

TEST_CASE(
    "precedence: a later apply_params beats an earlier one; filters select by kind and path") {
  Small s;
  auto g = compiled([&](Builder& b) {
    auto x = b.extern_data("data", {Dim::batch(), s.t, s.d});
    auto net = std::make_shared<Net>(s.d);
    net->apply_params({}, [](const std::string&, ParamSetter& p) { p.set_gradient_clip(1.0); });
    net->apply_params({std::nullopt, "first"},
                      [](const std::string&, ParamSetter& p) { p.set_gradient_clip(2.0); });
    net->apply_params({ir::ParamKind::kNormScale, "second"},
                      [](const std::string&, ParamSetter& p) { p.set_gradient_clip(3.0); });
    b.set_root(net);
    net->first->ff->forward(x).mark_as_output();
  });
  CHECK(param_at(g, "first.ff.weight").options.gradient_clip == 2.0);
  CHECK(param_at(g, "first.scale").options.gradient_clip == 2.0);
  CHECK(param_at(g, "second.ff.weight").options.gradient_clip == 1.0);
  CHECK(param_at(g, "second.scale").options.gradient_clip == 3.0);
  ParamFilter f{std::nullopt, "enc"};
  CHECK(f.matches("enc.w", ir::ParamKind::kWeight));
  CHECK(!f.matches("encoder.w", ir::ParamKind::kWeight));
}

TEST_CASE("scopes: innermost wins, explicit beats scope, apply beats scope") {
  Dim d = Dim::feature("d", 4);
  Module m("m");
  Parameter outer, inner, expl, applied, plain;
  {
    DTypeScope f64(ir::DType::kFloat64);
    DeviceScope dev("CPU:0");
    outer = m.register_parameter("outer", {d}, ir::ParamKind::kWeight);
    {
      DTypeScope f16(ir::DType::kFloat16);
      DeviceScope cpu("CPU");
      inner = m.register_parameter("inner", {d}, ir::ParamKind::kWeight);
      expl = m.register_parameter("expl", {d}, ir::ParamKind::kWeight);
      expl.set_dtype(ir::DType::kFloat32).set_device("CPU:1");
      applied = m.register_parameter("applied", {d}, ir::ParamKind::kBias);
    }
  }
  plain = m.register_parameter("plain", {d}, ir::ParamKind::kWeight);
  m.apply_params({ir::ParamKind::kBias, ""},
                 [](const std::string&, ParamSetter& p) { p.set_device("GPU"); });
  CHECK(outer.ir().dtype == ir::DType::kFloat64);
  CHECK(outer.ir().options.device == "CPU:0");
  CHECK(inner.ir().dtype == ir::DType::kFloat16);
  CHECK(inner.ir().options.device == "CPU");
  CHECK(expl.ir().dtype == ir::DType::kFloat32);
  CHECK(expl.ir().options.device == "CPU:1");
  CHECK(applied.ir().options.device == "GPU");
  CHECK(plain.ir().dtype == ir::DType::kFloat32);
  CHECK(plain.ir().options.device.empty());
}

TEST_CASE("hooks: a forward hook adds dropout to a submodule's output after construction") {
  Small s;
  auto build = [&](bool with_hook, bool remove) {
    return compiled([&](Builder& b) {
      auto x = b.extern_data("data", {Dim::batch(), s.t, s.d});
      auto net = std::make_shared<Net>(s.d);
      int h = net->first->ff->register_forward_hook(
          [](const Module&, const Tensor&, const Tensor& y) { return dropout(y, 0.25); });
      if (!with_hook) net->first->ff->remove_hook(h);
      if (remove) CHECK(!net->first->ff->remove_hook(h + 100));
      b.set_root(net);
      net->first->ff->forward(x).mark_as_output();
    });
  };
  auto count = [](const ir::Graph& g, ir::NodeKind k) {
    int n = 0;
    for (const ir::Node& node : g.nodes()) n += node.kind == k;
    return n;
  };
  ir::Graph hooked = build(true, true);
  REQUIRE(count(hooked, ir::NodeKind::kDropout) == 1);
  const ir::Node& out = hooked.node(hooked.marks()[0].node);
  CHECK(out.kind == ir::NodeKind::kDropout);
  CHECK(out.module_path == "first.ff");  // hooks run inside the module's scope
  CHECK(count(build(false, false), ir::NodeKind::kDropout) == 0);
}

TEST_CASE("hooks: a pre-hook replaces the input") {
  Small s;
  auto g = compiled([&](Builder& b) {
    auto x = b.extern_data("data", {Dim::batch(), s.t, s.d});
    auto lin = std::make_shared<Linear>(s.d, s.e);
    lin->register_forward_pre_hook([](const Module&, const Tensor& in) { return tanh(in); });
    b.set_root(lin);
    lin->forward(x).mark_as_output();
  });
  bool dot_reads_tanh = false;
  for (const ir::Node& n : g.nodes()) {
    if (n.kind == ir::NodeKind::kDot)
      dot_reads_tanh = g.node(n.inputs[0]).kind == ir::NodeKind::kActivation;
  }
  CHECK(dot_reads_tanh);
}

TEST_CASE("stochastic depth drops the branch per sequence; gradient scale and stop") {
  Small s;
  auto g = compiled([&](Builder& b) {
    auto x = b.extern_data("data", {Dim::batch(), s.t, s.d});
    auto lin = std::make_shared<Linear>(s.d, s.d);
    b.set_root(lin);
    auto y = stochastic_depth(x, lin->forward(x), 0.3);
    (scale_gradient(y, 0.5) + stop_gradient(y)).mark_as_output();
  });
  bool found = false;
  int scales = 0;
  for (const ir::Node& n : g.nodes()) {
    if (n.kind == ir::NodeKind::kDropout) {
      found = true;
      CHECK(n.attrs.get<ir::attr::Rate>() == 0.3);
      CHECK(n.attrs.get<ir::attr::Axes>() == std::vector<Dim>{Dim::batch()});
    }
    if (n.kind == ir::NodeKind::kScaleGrad) {
      double sc = n.attrs.get<ir::attr::Scale>();
      CHECK((sc == 0.5 || sc == 0.0));
      ++scales;
    }
  }
  CHECK(found);
  CHECK(scales == 2);
}

TEST_CASE("parametrization API: register, query, remove, and misuse") {
  Dim d = Dim::feature("d", 4), e = Dim::feature("e", 3);
  Linear lin(d, e);
  CHECK(!is_parametrized(lin, "weight"));
  weight_norm(lin, "weight");
  CHECK(is_parametrized(lin, "weight"));
  CHECK(lin.weight().parametrizations()[0].axes == std::vector<Dim>{d});
  CHECK_THROWS_AS(weight_norm(lin, "weight"), ModelError);  // twice
  CHECK_THROWS_AS(weight_norm(lin, "nonexistent"), ModelError);
  CHECK_THROWS_AS(weight_dropout(lin, "bias", 1.5), ModelError);
  CHECK_THROWS_AS(weight_noise(lin, "bias", -1.0), ModelError);
  CHECK_THROWS_AS(weight_norm(lin, "weight_other", {d}), ModelError);
  CHECK_THROWS_AS(weight_norm(lin, "bias"), ModelError);  // 1-D: axes needed
  remove_parametrizations(lin, "weight");
  CHECK(!is_parametrized(lin, "weight"));
  try {
    weight_norm(lin, "weight");
    weight_norm(lin, "weight");
    FAIL("expected an error");
  } catch (const ModelError& err) {
    CHECK_THAT(std::string(err.status().message()), Catch::Contains("already has weight norm"));
    CHECK_THAT(std::string(err.status().message()), Catch::Contains("note: registered here"));
  }
}

TEST_CASE("a param-init subgraph reading data is rejected at the user's line") {
  for (const ModelDef& m : testing::test_models()) {
    if (m.name != "init-reads-data") continue;
    auto g = emit::compile_model(m, emit::tf::target());
    REQUIRE(!g.ok());
    std::string msg(g.status().message());
    CHECK_THAT(msg,
               Catch::Contains("test_models.cc:" +
                               std::to_string(testing::mistake_line("init-reads-data")) + ":"));
    CHECK_THAT(msg, Catch::Contains("a param-init node may not read data"));
  }
}

}  // namespace
}  // namespace retc::nn

namespace retc::nn {
namespace {

TEST_CASE("per-kind default initializers") {
  ir::Dim d = ir::Dim::feature("d", 4);
  Module m("m");
  CHECK(m.register_parameter("w", {d, d}, ir::ParamKind::kWeight).ir().options.initial ==
        ir::Initializer::glorot_uniform());
  CHECK(m.register_parameter("e", {d, d}, ir::ParamKind::kEmbedding).ir().options.initial ==
        ir::Initializer::glorot_uniform());
  CHECK(m.register_parameter("b", {d}, ir::ParamKind::kBias).ir().options.initial ==
        ir::Initializer::constant(0));
  CHECK(m.register_parameter("s", {d}, ir::ParamKind::kNormScale).ir().options.initial ==
        ir::Initializer::constant(1));
  CHECK(m.register_parameter("h", {d}, ir::ParamKind::kNormShift).ir().options.initial ==
        ir::Initializer::constant(0));
  CHECK(m.register_parameter("a", {d}, ir::ParamKind::kAuxiliary).ir().options.initial ==
        ir::Initializer::constant(0));
}

}  // namespace
}  // namespace retc::nn
