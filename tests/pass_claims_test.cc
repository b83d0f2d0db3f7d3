// Every pass's "changed" result is what it did: true exactly when the graph
// (its canonical print: nodes, order, stages, names, params, marks) changed,
// false when not; and on a compiled graph (a fixed point of its pipeline)
// every pass claims false and changes nothing. Checked for every pass of
// the TF pipeline on every model that builds; each pass must have claimed
// both true and false somewhere.
#include <catch2/catch.hpp>
#include <map>

#include "configs/bundled.h"
#include "emit/target.h"
#include "emit/tf/target.h"
#include "emit/torch/target.h"
#include "ir/printer.h"
#include "tests/test_models.h"

namespace retc {
namespace {

TEST_CASE("the torch pipeline's passes report truthfully whether they changed the graph") {
  int compiled = 0;
  for (const ModelDef& m : configs::bundled_models()) {
    auto g = build_model(m);
    REQUIRE(g.ok());
    bool ok = true;
    for (const PassInfo* pass : emit::pipeline(emit::torch::target())) {
      INFO(m.name << ", pass " << pass->name);
      const std::string before = ir::print(*g);
      auto changed = pass->run(*g);
      if (!changed.ok()) {  // a kind the target does not lower yet
        ok = false;
        break;
      }
      CHECK(*changed == (ir::print(*g) != before));
    }
    if (!ok) continue;
    ++compiled;
    for (const PassInfo* pass : emit::pipeline(emit::torch::target())) {
      auto again = pass->run(*g);
      REQUIRE(again.ok());
      CHECK(!*again);
    }
  }
  CHECK(compiled >= 2);  // 12ax, lstm-lm
}

TEST_CASE("every pass reports truthfully whether it changed the graph") {
  std::vector<ModelDef> models = configs::bundled_models();
  for (ModelDef& m : testing::test_models()) models.push_back(std::move(m));
  std::map<std::string, std::pair<int, int>> claims;  // pass -> (true, false)
  for (const ModelDef& m : models) {
    auto g = build_model(m);
    if (!g.ok()) continue;  // the bad models
    bool compiled = true;
    for (const PassInfo* pass : emit::pipeline(emit::tf::target())) {
      INFO(m.name << ", pass " << pass->name);
      const std::string before = ir::print(*g);
      auto changed = pass->run(*g);
      if (!changed.ok()) {  // a user error (bad models); tested elsewhere
        compiled = false;
        break;
      }
      CHECK(*changed == (ir::print(*g) != before));
      auto& [yes, no] = claims[std::string(pass->name)];
      ++(*changed ? yes : no);
    }
    if (!compiled) continue;
    const std::string fixed = ir::print(*g);
    for (const PassInfo* pass : emit::pipeline(emit::tf::target())) {
      INFO(m.name << ", pass " << pass->name << " on the compiled graph");
      auto again = pass->run(*g);
      REQUIRE(again.ok());
      CHECK(!*again);
      ++claims[std::string(pass->name)].second;
      CHECK(ir::print(*g) == fixed);
    }
  }
  for (const PassInfo* pass : emit::pipeline(emit::tf::target())) {
    INFO(pass->name);
    const auto& [yes, no] = claims[std::string(pass->name)];
    CHECK(yes > 0);
    CHECK(no > 0);
  }
}

}  // namespace
}  // namespace retc
