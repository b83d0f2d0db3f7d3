// Unit tests of ir/: dims, the checking factory, the verifier, passes.
#include <catch2/catch.hpp>

#include "compiler/passes/dce.h"
#include "emit/tf/naming.h"
#include "ir/graph.h"
#include "ir/verifier.h"

namespace retc::ir {
namespace {

NodeId data(Graph& g, std::vector<Dim> dims, std::string key = "data") {
  NodeSpec s;
  s.attrs.set<ir::attr::Key>(key);
  s.type = TensorType{std::move(dims), DType::kFloat32, std::nullopt};
  return *g.add(NodeKind::kData, {}, std::move(s));
}

NodeId param(Graph& g, std::string path, std::vector<Dim> dims) {
  ParamId p = g.add_param(Param{path, dims, DType::kFloat32, ParamKind::kWeight, {}, {}});
  NodeSpec s;
  s.param = p;
  return *g.add(NodeKind::kParam, {}, std::move(s));
}

TEST_CASE("dims are identified by identity, derived dims structurally") {
  Dim a = Dim::feature("h", 4);
  Dim b = Dim::feature("h", 4);
  CHECK(a == a);
  CHECK(a != b);
  CHECK(4 * a == 4 * a);
  CHECK(4 * a != 4 * b);
  CHECK(4 * a != 2 * a);
  CHECK((4 * a).size() == 16);
  CHECK((a + b).size() == 8);
  CHECK(Dim::spatial("t").is_dynamic());
  CHECK(!(2 * Dim::spatial("t")).size().has_value());
  CHECK(Dim::spatial("t").floordiv(2) != Dim::spatial("t").floordiv(2));
  CHECK(Dim::batch() == Dim::batch());
  CHECK((4 * a).is_feature_like());
}

TEST_CASE("the factory infers types and rejects ill-typed nodes") {
  Graph g;
  Dim t = Dim::spatial("time"), in = Dim::feature("in", 3), out = Dim::feature("out", 5);
  NodeId x = data(g, {Dim::batch(), t, in});
  NodeId w = param(g, "w", {in, out});
  auto y = g.add(NodeKind::kDot, {x, w}, NodeSpec{Attrs{ir::attr::Reduce{std::vector<Dim>{in}}}});
  REQUIRE(y.ok());
  CHECK(g.node(*y).type.dims == std::vector<Dim>{Dim::batch(), t, out});

  auto bad =
      g.add(NodeKind::kDot, {x, w}, NodeSpec{Attrs{ir::attr::Reduce{std::vector<Dim>{out}}}});
  REQUIRE(!bad.ok());
  CHECK_THAT(std::string(bad.status().message()), Catch::Contains("must be in both operands"));

  auto no_attr = g.add(NodeKind::kDot, {x, w}, NodeSpec{});
  CHECK(!no_attr.ok());
  auto arity = g.add(NodeKind::kAdd, {x}, NodeSpec{});
  CHECK(!arity.ok());
  auto act =
      g.add(NodeKind::kActivation, {x}, NodeSpec{Attrs{ir::attr::Func{std::string("nope")}}});
  CHECK(!act.ok());
  auto drop =
      g.add(NodeKind::kDropout, {x}, NodeSpec{Attrs{ir::attr::Rate{-0.5}, ir::attr::Axes{{in}}}});
  REQUIRE(!drop.ok());
  CHECK_THAT(std::string(drop.status().message()), Catch::Contains("[0, 1)"));
  // The kind list declares dropout's attributes: a missing, an undeclared
  // or a mistyped one is an error naming it.
  auto no_axes = g.add(NodeKind::kDropout, {x}, NodeSpec{Attrs{ir::attr::Rate{0.1}}});
  REQUIRE(!no_axes.ok());
  CHECK(no_axes.status().message() == "dropout needs attribute 'axes' (a dim list)");
  auto extra = g.add(NodeKind::kDropout, {x},
                     NodeSpec{Attrs{ir::attr::Rate{0.1}, ir::attr::Axes{{in}}, ir::attr::Seed{1}}});
  REQUIRE(!extra.ok());
  CHECK(extra.status().message() == "dropout takes no attribute 'seed'");
  ir::Attrs mistyped{ir::attr::Axes{{in}}};
  mistyped.set(ir::AttrKey::kRate, ir::AttrValue(int64_t{1}));
  auto typed = g.add(NodeKind::kDropout, {x}, NodeSpec{mistyped});
  REQUIRE(!typed.ok());
  CHECK(typed.status().message() == "dropout: attribute 'rate' must be a number");
  auto dangling = g.add(NodeKind::kAdd, {x, NodeId{99}}, NodeSpec{});
  CHECK(!dangling.ok());
  // A variadic kind with too few inputs is an error before any input is read
  // (the parser fuzzer found an lstm with two).
  auto lstm = g.add(
      NodeKind::kLstm, {x, w},
      NodeSpec{Attrs{ir::attr::Axis{t}, ir::attr::OutDim{out}, ir::attr::Direction{int64_t{1}}}});
  REQUIRE(!lstm.ok());
  CHECK_THAT(std::string(lstm.status().message()), Catch::Contains("needs x, W, W_re, b"));
}

TEST_CASE("elementwise ops broadcast by dim") {
  Graph g;
  Dim t = Dim::spatial("time"), f = Dim::feature("f", 3);
  NodeId x = data(g, {Dim::batch(), t, f});
  NodeId b = param(g, "b", {f});
  auto y = g.add(NodeKind::kAdd, {x, b}, NodeSpec{});
  REQUIRE(y.ok());
  CHECK(g.node(*y).type.dims == std::vector<Dim>{Dim::batch(), t, f});
  // Every binary kind has the same rule and facts (the kind list's group).
  for (NodeKind k : {NodeKind::kMinimum, NodeKind::kMaximum}) {
    auto z = g.add(k, {b, x}, NodeSpec{});
    REQUIRE(z.ok());
    CHECK(g.node(*z).type.dims == std::vector<Dim>{f, Dim::batch(), t});
    CHECK(binary_op(k).has_value());
    CHECK(kind_facts(k).stage == StageClass::kAny);
    CHECK(!g.add(k, {x}, NodeSpec{}).ok());  // arity 2
  }
  CHECK(node_kind_name(NodeKind::kMinimum) == "minimum");
  CHECK(parse_node_kind("maximum") == NodeKind::kMaximum);
  CHECK(!binary_op(NodeKind::kDot).has_value());
}

TEST_CASE("the verifier rejects a param-init node that reads data, naming the source line") {
  Graph g;
  Dim f = Dim::feature("f", 3);
  NodeId x = data(g, {Dim::batch(), f});
  NodeSpec s{Attrs{ir::attr::Func{std::string("tanh")}}};
  s.stage = Stage::kParamInit;
  s.loc = SourceLoc{"model.cc", 12, 5};
  REQUIRE(g.add(NodeKind::kActivation, {x}, s).ok());  // the factory checks types only
  absl::Status st = verify(g);
  REQUIRE(!st.ok());
  CHECK_THAT(std::string(st.message()), Catch::StartsWith("model.cc:12:5: error:"));
  CHECK_THAT(std::string(st.message()), Catch::Contains("may not read data"));
}

TEST_CASE("the verifier rejects a param-init node reading a param's current value") {
  Graph g;
  Dim f = Dim::feature("f", 3);
  NodeId w = param(g, "w", {f});
  NodeSpec s{Attrs{ir::attr::Func{std::string("tanh")}}};
  s.stage = Stage::kParamInit;
  REQUIRE(g.add(NodeKind::kActivation, {w}, s).ok());
  absl::Status st = verify(g);
  REQUIRE(!st.ok());
  CHECK_THAT(std::string(st.message()), Catch::Contains("current value"));
}

TEST_CASE("the verifier rejects duplicate param paths and layer names") {
  Graph g;
  Dim f = Dim::feature("f", 3);
  param(g, "w", {f});
  param(g, "w", {f});
  CHECK(!verify(g).ok());

  Graph h;
  NodeId a = param(h, "a", {f});
  NodeId b = param(h, "b", {f});
  h.set_name(a, "same");
  h.set_name(b, "same");
  absl::Status st = verify(h);
  REQUIRE(!st.ok());
  CHECK_THAT(std::string(st.message()), Catch::Contains("used twice"));
}

TEST_CASE("dce removes dead nodes, keeps roots, and reports whether it changed") {
  Graph g;
  Dim t = Dim::spatial("time"), f = Dim::feature("f", 3);
  NodeId x = data(g, {Dim::batch(), t, f});
  NodeId w = param(g, "w", {f});
  NodeId dead =
      *g.add(NodeKind::kActivation, {x}, NodeSpec{Attrs{ir::attr::Func{std::string("relu")}}});
  NodeId live = *g.add(NodeKind::kAdd, {x, w}, NodeSpec{});
  (void)dead;
  g.add_mark(Mark{Mark::Kind::kOutput, live, "output", {}});
  auto changed = passes::dce(g);
  REQUIRE(changed.ok());
  CHECK(*changed);
  CHECK(g.size() == 3);
  CHECK(g.marks()[0].node.index == 2);
  CHECK(g.node(g.marks()[0].node).kind == NodeKind::kAdd);
  CHECK(verify(g).ok());
  auto again = passes::dce(g);
  REQUIRE(again.ok());
  CHECK(!*again);
}

TEST_CASE("naming gives unique RETURNN layer names") {
  Graph g;
  Dim t = Dim::spatial("time"), f = Dim::feature("f", 3);
  NodeId x = data(g, {Dim::batch(), t, f});
  NodeId w = param(g, "enc.w", {f});
  NodeSpec s;
  s.module_path = "enc";
  NodeId a = *g.add(NodeKind::kAdd, {x, w}, s);
  NodeId b = *g.add(NodeKind::kAdd, {a, w}, s);
  g.add_mark(Mark{Mark::Kind::kOutput, b, "output", {}});
  auto changed = emit::tf::naming(g);
  REQUIRE(changed.ok());
  CHECK(*changed);
  CHECK(g.node(x).name == "data:data");
  CHECK(g.node(w).name == "enc.w");
  CHECK(g.node(a).name == "enc.add");
  CHECK(g.node(b).name == "output");
  CHECK(verify(g).ok());
  CHECK(!*emit::tf::naming(g));
}

TEST_CASE("replace_all_uses redirects inputs and marks") {
  Graph g;
  Dim f = Dim::feature("f", 3);
  NodeId x = data(g, {Dim::batch(), f});
  NodeId y = data(g, {Dim::batch(), f}, "other");
  NodeId a =
      *g.add(NodeKind::kActivation, {x}, NodeSpec{Attrs{ir::attr::Func{std::string("relu")}}});
  g.add_mark(Mark{Mark::Kind::kOutput, x, "output", {}});
  g.replace_all_uses(x, y);
  CHECK(g.node(a).inputs[0] == y);
  CHECK(g.marks()[0].node == y);
}

}  // namespace
}  // namespace retc::ir
