// Unit tests of the IR printer and JSON dump.
#include "ir/printer.h"

#include <catch2/catch.hpp>

#include "configs/bundled.h"
#include "emit/target.h"
#include "emit/tf/target.h"
#include "ir/json.h"
#include "tests/golden.h"

namespace retc {
namespace {

TEST_CASE("canonical IR of a small graph") {
  ir::Graph g;
  ir::Dim t = ir::Dim::spatial("time"), f = ir::Dim::feature("f\"eat", 3);
  ir::NodeSpec s;
  s.attrs.set<ir::attr::Key>(std::string("data"));
  s.type = ir::TensorType{{ir::Dim::batch(), t, f}, ir::DType::kFloat32, std::nullopt};
  s.loc = ir::SourceLoc{"m.cc", 3, 9};
  ir::NodeId x = *g.add(ir::NodeKind::kData, {}, s);
  ir::NodeSpec a{ir::Attrs{ir::attr::Func{std::string("relu")}}};
  a.module_path = "enc";
  a.loc = ir::SourceLoc{"m.cc", 4, 1};
  ir::NodeId y = *g.add(ir::NodeKind::kActivation, {x}, a);
  g.add_mark(ir::Mark{ir::Mark::Kind::kOutput, y, "output", {}});
  const std::string expected =
      "dim time_dim = spatial \"time\"\n"
      "dim f_eat_dim = feature \"f\\\"eat\" 3\n"
      "%0 = data {key=\"data\"} : [batch_dim, time_dim, f_eat_dim] float32 stage=step\n"
      "%1 = activation %0 {func=\"relu\"} : [batch_dim, time_dim, f_eat_dim] float32 stage=step "
      "module=\"enc\"\n"
      "output \"output\" = %1\n";
  CHECK(ir::print(g) == expected);
  std::string debug = ir::print(g, {ir::PrintMode::kDebug, std::nullopt});
  CHECK_THAT(debug, Catch::Contains("loc=\"m.cc:4:1\""));
  CHECK_THAT(ir::print(g), !Catch::Contains("m.cc"));
}

TEST_CASE("the JSON dump carries every node's stage, type and location") {
  auto g = emit::compile_model(configs::model_12ax(), emit::tf::target());
  REQUIRE(g.ok());
  auto j = ir::to_json(*g);
  REQUIRE(j["nodes"].size() == g->size());
  int param_init = 0;
  for (const auto& n : j["nodes"]) {
    // Random initial values run once; everything else every step.
    CHECK(n["stage"] == (n["kind"] == "random" ? "param-init" : "step"));
    param_init += n["stage"] == "param-init";
    CHECK(n.contains("type"));
    CHECK(!n["loc"].is_null());
    CHECK(!n["name"].get<std::string>().empty());
  }
  CHECK(param_init == 3);  // the three weights' initial values
  REQUIRE(j["params"].size() == 5);
  CHECK(j["params"][0]["path"] == "lstm.ff_weight");
  CHECK(j["params"][0]["kind"] == "weight");
}

}  // namespace
}  // namespace retc
