// Unit tests of config emission: golden config, byte stability, structure.
#include <catch2/catch.hpp>
#include <cstdlib>

#include "compiler/nn/modules.h"
#include "configs/bundled.h"
#include "emit/model.h"
#include "emit/target.h"
#include "emit/tf/net_dict.h"
#include "emit/tf/target.h"
#include "emit/torch/target.h"
#include "ir/printer.h"
#include "tests/golden.h"
#include "tests/test_models.h"

namespace retc {
namespace {

// What `retc compile MODEL -o FILE` writes.
emit::ConfigOptions options(const ModelDef& m) { return config_options(m); }

TEST_CASE("every bundled model's config and IR match their golden files") {
  // tests/golden/MODEL.config is what `retc compile MODEL` writes, MODEL.ir
  // what `retc dump-ir MODEL` prints (the IR after the TF pipeline). The
  // digits corpus's path, which the config names, as on every machine:
  ::setenv("RETC_CORPUS_DIR", "/corpora", 1);
  for (const ModelDef& m : configs::bundled_models()) {
    INFO(m.name);
    auto g = emit::compile_model(m, emit::tf::target());
    REQUIRE(g.ok());
    testing::check_golden(m.name + ".ir", ir::print(*g));
    auto text = emit::compile_to_config(m, emit::tf::target(), options(m));
    REQUIRE(text.ok());
    testing::check_golden(m.name + ".config", *text);
  }
}

TEST_CASE("a model with pretraining stages: a network per stage on both targets, byte-stable") {
  ModelDef m = configs::model_conformer_ctc_grow();
  for (const emit::Target* target : {&emit::tf::target(), &emit::torch::target()}) {
    INFO(target->name);
    auto a = emit::compile_to_config(m, *target, options(m));
    auto b = emit::compile_to_config(m, *target, options(m));
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    CHECK(*a == *b);
    CHECK_THAT(*a, Catch::Contains("_stage_epochs = [3]\n"));
    if (target->name == "tf") {
      CHECK_THAT(*a, Catch::Contains("def get_network(epoch, **_kwargs):"));
      CHECK_THAT(*a, Catch::Contains("return [network_stage0, network][_stage_of(epoch)]"));
    } else {
      testing::check_golden("conformer-ctc-grow.torch.config", *a);
      CHECK_THAT(*a, Catch::Contains("[_train_step_stage0, _train_step_stage1]"));
    }
  }
  // Every stage reads the same extern data.
  ModelDef other = m;
  other.build = [](nn::Builder& b) {
    const ir::Dim time = ir::Dim::spatial("time");
    const ir::Dim in = ir::Dim::feature("in", b.stage() == 0 ? 4 : 5);
    nn::Tensor x = b.extern_data("data", {ir::Dim::batch(), time, in});
    auto lin = b.set_root(std::make_shared<nn::Linear>(in, ir::Dim::feature("out", 3)));
    lin->forward(x).mark_as_output();
  };
  other.stage_epochs = {2};
  for (const emit::Target* target : {&emit::tf::target(), &emit::torch::target()}) {
    auto text = emit::compile_to_config(other, *target, options(other));
    REQUIRE_FALSE(text.ok());
    CHECK_THAT(std::string(text.status().message()),
               Catch::Contains("pretraining stage 0 reads other extern data"));
  }
  // Inference compiles the last stage only.
  emit::ConfigOptions eval = options(m);
  eval.task.task = emit::Task::kEval;
  auto text = emit::compile_to_config(m, emit::tf::target(), eval);
  REQUIRE(text.ok());
  CHECK_THAT(*text, !Catch::Contains("get_network"));
}

TEST_CASE("the torch config of 12ax matches its golden file, byte-stable") {
  ModelDef m = configs::model_12ax();
  auto a = emit::compile_to_config(m, emit::torch::target(), options(m));
  auto b = emit::compile_to_config(m, emit::torch::target(), options(m));
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(*a == *b);
  testing::check_golden("12ax.torch.config", *a);
}

TEST_CASE("search configs match their golden files on both targets, byte-stable") {
  // What `retc search transformer-copy --beam 4` runs (the checkpoint and
  // the output file as placeholders).
  ModelDef m = configs::model_transformer_copy();
  emit::ConfigOptions opts = options(m);
  opts.task.task = emit::Task::kSearch;
  opts.task.load = "retc-work/transformer-copy/model/network.008";
  opts.task.data_name = "dev";
  opts.task.data = opts.training.dev;
  opts.task.output_file = "hyps.py";
  opts.task.beam = 4;
  for (const emit::Target* target : {&emit::tf::target(), &emit::torch::target()}) {
    INFO(target->name);
    auto a = emit::compile_to_config(m, *target, opts);
    auto b = emit::compile_to_config(m, *target, opts);
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    CHECK(*a == *b);
    testing::check_golden(absl::StrCat("transformer-copy.search.", target->name, ".config"), *a);
  }
}

TEST_CASE("the torch target compiles every bundled model") {
  for (const ModelDef& m : configs::bundled_models()) {
    INFO(m.name);
    auto text = emit::compile_to_config(m, emit::torch::target(), options(m));
    CHECK(text.ok());
  }
}

TEST_CASE("a param option the torch target cannot give is a user error naming the target") {
  for (const ModelDef& m : testing::param_test_models()) {
    if (m.name != "scoped") continue;
    auto text = emit::compile_to_config(m, emit::torch::target(), options(m));
    REQUIRE(!text.ok());
    CHECK(absl::IsInvalidArgument(text.status()));
    CHECK_THAT(std::string(text.status().message()),
               Catch::Contains("param_models.cc:") &&
                   Catch::Contains("the torch target does not support a device of its own") &&
                   Catch::Contains("--backend tf"));
  }
}

TEST_CASE("compiling twice gives identical bytes") {
  for (const ModelDef& m : configs::bundled_models()) {
    auto a = emit::compile_to_config(m, emit::tf::target(), options(m));
    auto b = emit::compile_to_config(m, emit::tf::target(), options(m));
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    CHECK(*a == *b);
  }
}

TEST_CASE("params become variable layers named by module path") {
  auto g = emit::compile_model(configs::model_12ax(), emit::tf::target());
  REQUIRE(g.ok());
  auto net = emit::tf::emit_net_dict(*g);
  REQUIRE(net.ok());
  const emit::PyValue* w = net->network.get("lstm.ff_weight");
  REQUIRE(w);
  CHECK(*w->get("class") == emit::PyValue("variable"));
  CHECK(*w->get("name_scope") == emit::PyValue("/lstm/ff_weight"));
  CHECK(*w->get("param_name") == emit::PyValue("param"));
  const emit::PyValue* lstm = net->network.get("lstm.lstm");
  REQUIRE(lstm);
  CHECK(*lstm->get("unit") == emit::PyValue("nativelstm2"));
  CHECK(net->network.get("output"));
  CHECK(*net->network.get("ce")->get("loss") == emit::PyValue("ce"));
}

// The TF net dict of the module test model `name`.
emit::tf::NetDict tf_net_of_module_model(const std::string& name) {
  for (const ModelDef& m : testing::module_test_models()) {
    if (m.name != name) continue;
    auto g = emit::compile_model(m, emit::tf::target());
    REQUIRE(g.ok());
    auto net = emit::tf::emit_net_dict(*g);
    REQUIRE(net.ok());
    return *std::move(net);
  }
  FAIL("no module test model " << name);
  return {};
}

TEST_CASE("minimum and maximum become RETURNN combine layers") {
  const emit::tf::NetDict net = tf_net_of_module_model("op-functional");
  CHECK(*net.network.get("min_xy")->get("kind") == emit::PyValue("minimum"));
  CHECK(*net.network.get("max_x")->get("kind") == emit::PyValue("maximum"));
  CHECK(*net.network.get("max_x")->get("class") == emit::PyValue("combine"));
}

TEST_CASE("slices that cut an axis into parts become one split layer on TF") {
  const emit::tf::NetDict net = tf_net_of_module_model("op-reverse-slice");
  const emit::PyValue* split = net.network.get("in_a_split");
  REQUIRE(split != nullptr);
  CHECK(*split->get("class") == emit::PyValue("split"));
  CHECK(split->get("out_dims")->repr() == "[in_a_dim, in_b_dim]");
  CHECK(*net.network.get("in_a")->get("from") == emit::PyValue("in_a_split/0"));
  CHECK(*net.network.get("in_b")->get("from") == emit::PyValue("in_a_split/1"));
  CHECK(*net.network.get("in_b")->get("class") == emit::PyValue("copy"));
  // A part left out, parts that overlap: slices.
  for (const char* name : {"class_0", "class_2", "h2_01", "h2_12"}) {
    INFO(name);
    CHECK(*net.network.get(name)->get("class") == emit::PyValue("slice"));
  }
}

TEST_CASE("a dot plus a bias becomes one linear layer on TF, where nothing else reads the dot") {
  const emit::tf::NetDict net = tf_net_of_module_model("op-array");
  CHECK(net.uses_linear);
  for (const char* name : {"output", "linear_t", "linear_stacked", "linear_over_two"}) {
    INFO(name);
    const emit::PyValue& layer = *net.network.get(name);
    CHECK(*layer.get("class") == emit::PyValue("eval"));
    CHECK(*layer.get("out_type") == emit::PyValue::ref("_retc_linear_type"));
  }
  CHECK(net.network.get("output")->get("from")->repr() ==
        "[\"data:data\", \"lin.weight\", \"lin.bias\"]");
  CHECK(net.network.get("linear_over_two")->get("eval_locals")->get("reduce")->repr() == "two_dim");
  // The dot that a second layer reads stays a dot, its add a combine layer.
  CHECK(*net.network.get("dot_plus_bias")->get("class") == emit::PyValue("combine"));
  // No dot of a fused add is left in the net dict (in loops, dots stay: the
  // goldens of conformer-transducer and librispeech-att-2019).
  std::vector<std::string> dots;
  for (const auto& [name, layer] : net.network.items()) {
    if (*layer.get("class") == emit::PyValue("dot")) dots.push_back(name);
  }
  REQUIRE(dots.size() == 1);
  CHECK(net.network.get("dot_plus_bias")->get("from")->elements()[0] == emit::PyValue(dots[0]));
}

TEST_CASE("hostile names are escaped in the config") {
  for (const ModelDef& m : testing::test_models()) {
    if (m.name != "hostile-names") continue;
    auto text = emit::compile_to_config(m, emit::tf::target(), options(m));
    REQUIRE(text.ok());
    CHECK_THAT(*text, Catch::Contains("SpatialDim(\"ti\\\"me\\\\\\n'); import os #\")"));
    CHECK_THAT(*text, Catch::Contains("\\u00e9"));
    CHECK_THAT(*text, !Catch::Contains("\nimport os"));
  }
}

TEST_CASE("typed training-setup options become RETURNN's entries, checked first") {
  emit::ConfigOptions opts;
  emit::TrainingSetup& t = opts.training;
  t.learning_rates = emit::warmup_learning_rates(0.001, 0.003, 3);
  t.lr_control.kind = emit::LearningRateControl::Kind::kNewbobAbs;
  t.lr_control.threshold = 0.02;
  t.lr_control.error_measure = "dev_score_output";
  t.accumulate_gradients = 2;
  t.chunking = "500:250";
  t.max_seq_length = {{"classes", 75}};
  const std::string text = emit::training_entries(opts);
  CHECK_THAT(text, Catch::Contains("learning_rates = [0.001, 0.002, 0.003]\n"));
  CHECK_THAT(text, Catch::Contains("learning_rate_control = \"newbob_abs\"\n"));
  CHECK_THAT(text, Catch::Contains("newbob_error_threshold = 0.02\n"));
  CHECK_THAT(text, Catch::Contains("learning_rate_control_error_measure = \"dev_score_output\"\n"));
  CHECK_THAT(text, Catch::Contains("accum_grad_multiple_step = 2\n"));
  CHECK_THAT(text, Catch::Contains("chunking = \"500:250\"\n"));
  CHECK_THAT(text, Catch::Contains("max_seq_length = {\"classes\": 75}\n"));
  // Defaults write nothing beyond what every config has.
  const std::string plain = emit::training_entries(emit::ConfigOptions{});
  CHECK_THAT(plain, !Catch::Contains("learning_rate_control"));
  CHECK_THAT(plain, !Catch::Contains("gradient_"));
  CHECK(emit::check_training_setup(t, "m").ok());
  auto bad = [&](auto change) {
    emit::TrainingSetup u = t;
    change(u);
    absl::Status s = emit::check_training_setup(u, "m");
    CHECK_FALSE(s.ok());
    return std::string(s.message());
  };
  CHECK_THAT(bad([](emit::TrainingSetup& u) { u.chunking = "500"; }),
             Catch::Contains("model 'm': training setup: chunking must be \"size:step\""));
  CHECK_THAT(bad([](emit::TrainingSetup& u) { u.accumulate_gradients = 0; }),
             Catch::Contains("accumulate_gradients must be at least 1"));
  CHECK_THAT(bad([](emit::TrainingSetup& u) { u.lr_control.decay = 1.5; }),
             Catch::Contains("lr_control.decay must be in (0, 1]"));
  CHECK_THAT(bad([](emit::TrainingSetup& u) { u.gradient_noise = -1; }),
             Catch::Contains("must not be negative"));
  CHECK_THAT(bad([](emit::TrainingSetup& u) {
               u.max_seq_length = {{"data", 0}};
             }),
             Catch::Contains("max_seq_length of 'data' must be at least 1"));
}

TEST_CASE("epoch_wise_filter has tuple keys") {
  emit::PyValue f = emit::epoch_wise_filter({{1, 5, 50.0}, {6, 10, 150.0}});
  CHECK(f.repr() == "{(1, 5): {\"max_mean_len\": 50.0}, (6, 10): {\"max_mean_len\": 150.0}}");
  CHECK(emit::format_assignment("f", emit::PyValue::map({})) == "f = {}\n");
}

}  // namespace
}  // namespace retc
