// The IR text parser: round trips over every bundled and test model and
// after every pass, and errors with line:col.
#include "ir/parser.h"

#include <catch2/catch.hpp>

#include "compiler/nn/builder.h"
#include "compiler/pipeline.h"
#include "configs/bundled.h"
#include "emit/target.h"
#include "emit/tf/target.h"
#include "ir/format.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "tests/test_models.h"

namespace retc {
namespace {

std::vector<ModelDef> all_models() {
  std::vector<ModelDef> all = configs::bundled_models();
  for (ModelDef& m : testing::test_models()) all.push_back(std::move(m));
  return all;
}

void check_round_trip(const ir::Graph& g, const std::string& what) {
  INFO(what);
  for (ir::PrintMode mode : {ir::PrintMode::kCanonical, ir::PrintMode::kDebug}) {
    std::string text = ir::print(g, {mode, std::nullopt});
    auto parsed = ir::parse(text, what);
    if (!parsed.ok()) FAIL(parsed.status().message() << "\n" << text);
    CHECK(ir::equivalent(*parsed, g));
    CHECK(ir::verify(*parsed).ok() == ir::verify(g).ok());
    if (mode == ir::PrintMode::kDebug) CHECK(ir::print(*parsed, {mode, std::nullopt}) == text);
  }
}

TEST_CASE("parse(print(g)) == g for every model, as built and after every pass") {
  int checked = 0;
  for (const ModelDef& m : all_models()) {
    auto g = build_model(m);
    if (!g.ok()) continue;  // the bad models
    check_round_trip(*g, m.name + " (as built)");
    ++checked;
    absl::Status s = run_passes(*g, emit::pipeline(emit::tf::target()),
                                [&](absl::string_view pass, const ir::Graph& after) {
                                  check_round_trip(after, m.name + " after " + std::string(pass));
                                  ++checked;
                                });
    // Only a model with a mistake may fail here: a user error at its line,
    // never an internal one.
    if (!s.ok()) {
      INFO(m.name << ": " << s.message());
      CHECK(absl::IsInvalidArgument(s));
      CHECK_THAT(std::string(s.message()), Catch::Contains(": error: "));
    }
  }
  CHECK(checked > 20);
}

TEST_CASE("a gradient-checkpointed module round-trips: 'checkpoint \"PATH\"' lines") {
  const ModelDef* cc = nullptr;
  const std::vector<ModelDef> bundled = configs::bundled_models();
  for (const ModelDef& m : bundled) {
    if (m.name == "conformer-ctc") cc = &m;
  }
  REQUIRE(cc);
  auto def = with_options(*cc, {"gradient_checkpoint=true"});
  REQUIRE(def.ok());
  auto g = build_model(*def);
  REQUIRE(g.ok());
  REQUIRE(g->checkpoints().size() == 2);
  CHECK(g->checkpoints()[0].module_path == "encoder.layers.0");
  CHECK(g->checkpoints()[1].module_path == "encoder.layers.1");
  const std::string text = ir::print(*g);
  CHECK_THAT(text, Catch::Contains(
                       "\ncheckpoint \"encoder.layers.0\"\ncheckpoint \"encoder.layers.1\"\n"));
  check_round_trip(*g, "conformer-ctc with gradient_checkpoint=true");
  CHECK(ir::in_checkpoint(g->checkpoints()[0], "encoder.layers.0.ff1"));
  CHECK(ir::in_checkpoint(g->checkpoints()[0], "encoder.layers.0"));
  CHECK_FALSE(ir::in_checkpoint(g->checkpoints()[0], "encoder.layers.01"));
  CHECK_FALSE(ir::in_checkpoint(g->checkpoints()[0], "encoder"));
}

TEST_CASE("strings round-trip through quote and unquote") {
  for (std::string s :
       {std::string(""), std::string("plain"), std::string("q\"uo'te\\"), std::string("nl\n\r\t"),
        std::string("caf\u00e9 \u2603 \U0001F600"), std::string("nul\0x", 5)}) {
    auto back = ir::unquote(ir::quote(s));
    REQUIRE(back.ok());
    CHECK(*back == s);
  }
  CHECK(!ir::unquote("\"abc").ok());
  CHECK(!ir::unquote("\"a\\q\"").ok());
  CHECK(!ir::unquote("\"a\\u12\"").ok());
  CHECK(!ir::unquote("\"\\ud800\"").ok());
}

TEST_CASE("parse errors name line and column") {
  auto err = [](const std::string& text) {
    auto g = ir::parse(text, "t.ir");
    REQUIRE(!g.ok());
    return std::string(g.status().message());
  };
  CHECK_THAT(
      err("dim a = feature \"a\" 3\n%0 = data {key=\"x\"} : [batch_dim, b] float32 stage=step\n"),
      Catch::StartsWith("t.ir:2:") && Catch::Contains("unknown dim 'b'"));
  CHECK_THAT(err("%0 = frobnicate : [] float32 stage=step\n"),
             Catch::StartsWith("t.ir:1:6: error: unknown node kind"));
  CHECK_THAT(
      err("dim a = feature \"a\" 3\n%0 = data {key=\"x\"} : [batch_dim, a] float32 stage=step\n"
          "%1 = add %0, %2 : [batch_dim, a] float32 stage=step\n"),
      Catch::Contains("t.ir:3:") && Catch::Contains("not defined before %1"));
  CHECK_THAT(
      err("dim a = feature \"a\" 3\n%0 = data {key=\"x\"} : [batch_dim, a] float32 stage=step\n"
          "%1 = activation %0 {func=\"relu\"} : [batch_dim] float32 stage=step\n"),
      Catch::Contains("differs from the inferred type"));
  CHECK_THAT(err("dim a = feature \"a\" 3\ndim a = feature \"b\" 4\n"),
             Catch::Contains("declared twice"));
  CHECK_THAT(err("%1 = data {key=\"x\"} : [batch_dim] float32 stage=step\n"),
             Catch::Contains("expected node %0"));
  CHECK_THAT(err("output \"o\" = %3\n"), Catch::Contains("node %3 is not defined"));
  CHECK_THAT(err("dim a = feature \"a\\q\" 3\n"), Catch::Contains("unknown escape"));
  // Attributes are read against the kind's declaration (ir/attrs.h).
  const std::string x =
      "dim a = feature \"a\" 3\n%0 = data {key=\"x\"} : [batch_dim, a] float32 stage=step\n";
  CHECK_THAT(err(x + "%1 = activation %0 {fun=\"relu\"} : [batch_dim, a] float32 stage=step\n"),
             Catch::StartsWith("t.ir:3:") && Catch::Contains("unknown attribute 'fun'"));
  CHECK_THAT(err(x + "%1 = activation %0 {func=\"relu\", seed=1} : [batch_dim, a] float32 "
                     "stage=step\n"),
             Catch::Contains("activation takes no attribute 'seed'"));
  CHECK_THAT(err(x + "%1 = activation %0 {func=1} : [batch_dim, a] float32 stage=step\n"),
             Catch::Contains("attribute 'func' must be a string"));
  CHECK_THAT(err(x + "%1 = activation %0 : [batch_dim, a] float32 stage=step\n"),
             Catch::Contains("activation needs attribute 'func' (a string)"));
}

TEST_CASE("an integer literal reads as a number where the declaration says one") {
  auto g = ir::parse(
      "dim a = feature \"a\" 3\n"
      "%0 = constant {value=2, shape=[a]} : [a] float32 stage=step\n",
      "t.ir");
  REQUIRE(g.ok());
  CHECK(g->nodes()[0].attrs.get<ir::attr::Value>() == 2.0);
}

}  // namespace
}  // namespace retc
