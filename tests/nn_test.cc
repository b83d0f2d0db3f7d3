// Unit tests of the model API: module tree, params, errors at the user's line.
#include <catch2/catch.hpp>

#include "compiler/model.h"
#include "compiler/nn/error.h"
#include "compiler/nn/modules.h"
#include "tests/test_models.h"

namespace retc::nn {
namespace {

using ir::Dim;

class Block : public Module {
 public:
  Block(Dim d) : Module("block") {
    ff = register_module("ff", std::make_shared<Linear>(d, d));
    scale = register_parameter("scale", {d}, ir::ParamKind::kNormScale, ir::Initializer::constant(1.0));
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
  ModelDef def{"m", "", [&](Builder& b) {
                 auto x = b.extern_data("data", {Dim::batch(), t, d});
                 auto net = b.set_root(std::make_shared<Net>(d));
                 net->first->ff->forward(x).mark_as_output();
                 net->first->ff->weight().set_initial(ir::Initializer::glorot_normal());
               }, {}};
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
    CHECK_THAT(msg, Catch::Contains("test_models.cc:" + std::to_string(testing::mistake_line("bad-dims")) + ":"));
    CHECK_THAT(msg, Catch::Contains("error: linear '<root>': input dim 'feat'(512) does not match "
                                    "in_dim 'hidden'(256)"));
  }
}

TEST_CASE("model mistakes are user errors at the user's line") {
  for (const std::string name : {"duplicate-loss", "unregistered-param"}) {
    for (const ModelDef& m : testing::test_models()) {
      if (m.name != name) continue;
      auto g = compile_model(m);
      INFO(name);
      REQUIRE(!g.ok());
      CHECK_THAT(std::string(g.status().message()),
                 Catch::Contains("test_models.cc:" + std::to_string(testing::mistake_line(name)) + ":"));
    }
  }
}

TEST_CASE("invalid and duplicate member names are rejected") {
  Dim d = Dim::feature("d", 4);
  Module m("m");
  CHECK_THROWS_AS(m.register_parameter("a.b", {d}, ir::ParamKind::kWeight, {}), ModelError);
  CHECK_THROWS_AS(m.register_parameter("", {d}, ir::ParamKind::kWeight, {}), ModelError);
  m.register_parameter("w", {d}, ir::ParamKind::kWeight, {});
  CHECK_THROWS_AS(m.register_parameter("w", {d}, ir::ParamKind::kWeight, {}), ModelError);
  CHECK_THROWS_AS(m.register_module("w", std::make_shared<Linear>(d, d)), ModelError);
  CHECK_THROWS_AS(m.register_parameter("t", {Dim::spatial("t")}, ir::ParamKind::kWeight, {}),
                  ModelError);
  try {
    m.register_module("x/y", std::make_shared<Linear>(d, d));
    FAIL("expected an error");
  } catch (const ModelError& e) {
    CHECK_THAT(std::string(e.status().message()), Catch::Contains("nn_test.cc:"));
  }
}

TEST_CASE("extern data is checked") {
  ModelDef def{"m", "", [](Builder& b) {
                 b.extern_data("data", {Dim::feature("f", 3)});  // no batch dim
               }, {}};
  auto g = build_model(def);
  REQUIRE(!g.ok());
  CHECK_THAT(std::string(g.status().message()), Catch::Contains("must start with the batch dim"));
}

TEST_CASE("pretty_print shows the module tree") {
  Net net(Dim::feature("d", 4));
  std::string s = net.pretty_print();
  CHECK_THAT(s, Catch::Contains("net\n  first: block\n    scale: ['d'(4)] norm-scale\n    ff: linear\n"));
}

}  // namespace
}  // namespace retc::nn
