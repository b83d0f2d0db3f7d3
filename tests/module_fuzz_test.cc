// A fuzzer of the module API: random options and sizes (zeros, negatives,
// NaN, infinities, huge sizes among them) into the public module
// constructors and ops, each in a small model. Every configuration must give
// a model, or an error at a line of this file (the model code's line); none
// may crash (the sanitizer run in CI runs this under ASan). A model built is
// compiled for both targets: a config, or an error that names the target.
// RETC_MODULE_FUZZ_RUNS=N sets the number of configurations (default 1500),
// RETC_MODULE_FUZZ_SEED the first seed.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <limits>
#include <random>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "compiler/nn/attention.h"
#include "compiler/nn/conformer.h"
#include "compiler/nn/modules.h"
#include "compiler/nn/transformer.h"
#include "compiler/nn/zoneout.h"
#include "emit/model.h"
#include "emit/target.h"
#include "emit/tf/target.h"
#include "emit/torch/target.h"

namespace retc::testing {
namespace {

using ir::Dim;
using nn::Builder;
using nn::Tensor;

// Random choices from one seed; sizes and numbers from the edges first.
class Chooser {
 public:
  explicit Chooser(uint64_t seed) : rng_(seed) {}
  int64_t size() {
    static const int64_t kSizes[] = {-3, -1, 0, 1, 1, 2, 3, 4, 4, 6, 8, 8, 12, int64_t{1} << 31};
    return kSizes[pick(std::size(kSizes))];
  }
  int64_t small() {
    static const int64_t kSmall[] = {-1, 0, 1, 1, 2, 2, 3, 4};
    return kSmall[pick(std::size(kSmall))];
  }
  double number() {
    static const double kNumbers[] = {std::nan(""),
                                      -std::numeric_limits<double>::infinity(),
                                      std::numeric_limits<double>::infinity(),
                                      -1.0,
                                      -0.1,
                                      0.0,
                                      0.0,
                                      0.1,
                                      0.1,
                                      0.5,
                                      0.9,
                                      1.0,
                                      1.5,
                                      1e30};
    return kNumbers[pick(std::size(kNumbers))];
  }
  bool flip() { return pick(2) == 1; }
  size_t pick(size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng_); }

 private:
  std::mt19937_64 rng_;
};

// One random model: [B, time, in] data, a module or op with random options
// at the root, its output marked. Every call here is on a line of this file.
void build_random(Builder& b, uint64_t seed) {
  Chooser c(seed);
  Dim time = Dim::spatial("time");
  Dim in = Dim::feature("in", c.size());
  Dim out = Dim::feature("out", c.size());
  Tensor x = b.extern_data("data", {Dim::batch(), time, in});
  auto root = std::make_shared<nn::Module>("net");
  Tensor y;
  switch (c.pick(14)) {
    case 0: {
      auto m = root->register_module("lin", std::make_shared<nn::Linear>(in, out, c.flip()));
      b.set_root(root);
      y = m->forward(x);
      break;
    }
    case 1: {
      auto o = nn::Conv1dOptions(in, out, c.small()).stride(c.small()).dilation(c.small());
      o.groups(c.small()).padding(c.flip() ? "same" : "valid");
      auto m = root->register_module("conv", std::make_shared<nn::Conv1d>(o));
      b.set_root(root);
      y = m->forward(x, time);
      break;
    }
    case 2: {
      auto o = nn::TransposedConv1dOptions(in, out, c.small()).stride(c.small());
      auto m = root->register_module("tconv", std::make_shared<nn::TransposedConv1d>(o));
      b.set_root(root);
      y = m->forward(x, time);
      break;
    }
    case 3: {
      auto m =
          root->register_module("bn", std::make_shared<nn::BatchNorm>(in, c.number(), c.number()));
      b.set_root(root);
      y = m->forward(x);
      break;
    }
    case 4: {
      nn::SelfAttentionOptions o(in, Dim::feature("key", c.size()), Dim::feature("value", c.size()),
                                 c.small());
      o.causal(c.flip()).rel_pos_clipping(c.small()).att_dropout(c.number());
      auto m = root->register_module("att", std::make_shared<nn::SelfAttention>(o));
      b.set_root(root);
      y = m->forward(x, time);
      break;
    }
    case 5: {
      nn::RelPosSelfAttentionOptions o(in, Dim::feature("key", c.size()),
                                       Dim::feature("value", c.size()), c.small());
      o.att_dropout(c.number());
      auto m = root->register_module("att", std::make_shared<nn::RelPosSelfAttention>(o));
      b.set_root(root);
      y = m->forward(x, time);
      break;
    }
    case 6: {
      auto m = root->register_module(
          "cross", std::make_shared<nn::CrossAttention>(in, in, Dim::feature("key", c.size()),
                                                        Dim::feature("value", c.size()), c.small(),
                                                        c.number()));
      b.set_root(root);
      Dim mem_time = Dim::spatial("mem_time");
      Tensor mem = b.extern_data("memory", {Dim::batch(), mem_time, in});
      y = m->forward(x, mem, mem_time);
      break;
    }
    case 7: {
      auto m = root->register_module(
          "zlstm", std::make_shared<nn::ZoneoutLstm>(in, out, c.number(), c.number()));
      b.set_root(root);
      y = m->forward(x, time);
      break;
    }
    case 8: {
      auto m = root->register_module("lin", std::make_shared<nn::Linear>(in, out));
      m->weight().set_weight_decay(c.number());
      m->bias().set_initial(ir::Initializer::constant(c.number()));
      if (c.flip()) m->weight().set_initial(ir::Initializer::normal(c.number(), c.number()));
      b.set_root(root);
      y = m->forward(x);
      break;
    }
    case 9: {
      b.set_root(root);
      y = nn::dropout(x, c.number());
      break;
    }
    case 10: {
      b.set_root(root);
      y = nn::repeat(x, time, c.small(), Dim::spatial("repeated"));
      break;
    }
    case 11: {
      b.set_root(root);
      y = nn::pool(x, c.flip() ? "max" : "avg", {time}, {c.small()}, {c.small()},
                   c.flip() ? "same" : "valid");
      break;
    }
    case 12: {
      nn::TransformerOptions o(in, out, c.small());
      o.num_layers(c.small()).dropout(c.number());
      auto m = root->register_module("enc", std::make_shared<nn::TransformerEncoder>(o));
      b.set_root(root);
      y = m->forward(x, time);
      break;
    }
    default: {
      nn::ConformerOptions o;
      o.num_heads(c.small()).conv_kernel(c.small()).rel_pos_clipping(c.small()).dropout(c.number());
      auto m = root->register_module("block", std::make_shared<nn::ConformerBlock>(in, out, o));
      b.set_root(root);
      y = m->forward(x, time);
      break;
    }
  }
  y.mark_as_output();
}

int64_t env_int(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoll(v) : fallback;
}

TEST_CASE("module API fuzz: random options give a model or an error at the model code's line") {
  const int64_t runs = env_int("RETC_MODULE_FUZZ_RUNS", 1500);
  const uint64_t first = static_cast<uint64_t>(env_int("RETC_MODULE_FUZZ_SEED", 1));
  int64_t built = 0, rejected = 0, compiled = 0;
  for (int64_t i = 0; i < runs; ++i) {
    const uint64_t seed = first + static_cast<uint64_t>(i);
    ModelDef def;
    def.name = "fuzz";
    def.build = [seed](Builder& b) { build_random(b, seed); };
    INFO("seed " << seed);
    auto g = build_model(def);
    if (!g.ok()) {
      ++rejected;
      const std::string msg(g.status().message());
      INFO(msg);
      CHECK(absl::StrContains(msg, "module_fuzz_test.cc:"));
      CHECK(absl::StrContains(msg, ": error: "));
      continue;
    }
    ++built;
    for (const emit::Target* target : {&emit::tf::target(), &emit::torch::target()}) {
      auto text = emit::compile_to_config(def, *target, emit::ConfigOptions{});
      if (text.ok()) {
        ++compiled;
        continue;
      }
      const std::string msg(text.status().message());
      INFO(target->name << ": " << msg);
      CHECK((absl::StrContains(msg, "module_fuzz_test.cc:") ||
             absl::StrContains(msg, absl::StrCat(target->name, " target"))));
    }
  }
  WARN("module API fuzz: " << runs << " configurations from seed " << first << ": " << built
                           << " built (" << compiled << " configs for both targets), " << rejected
                           << " rejected at their line");
  CHECK(built > 0);
  CHECK(rejected > 0);
}

}  // namespace
}  // namespace retc::testing
