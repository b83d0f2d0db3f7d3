// The module-API fuzzer's models (tests/module_fuzz_test.cc builds them from
// each seed; tests/integration/test_modules.py's module_fuzz takes the ones
// retc accepts through RETURNN on both targets, as test models "fuzz:SEED"
// that retc_test_models lists when RETC_MODULE_FUZZ_MODELS=FIRST:COUNT is
// set): random options and sizes (zeros, negatives, NaN, infinities, huge
// sizes among them) into the public module constructors and ops.
#include <cmath>
#include <cstdlib>
#include <limits>
#include <random>
#include <string>

#include "absl/strings/str_cat.h"
#include "compiler/nn/attention.h"
#include "compiler/nn/conformer.h"
#include "compiler/nn/modules.h"
#include "compiler/nn/transformer.h"
#include "compiler/nn/zoneout.h"
#include "tests/test_models.h"

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

}  // namespace

void build_fuzz_model(Builder& b, uint64_t seed) {
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

std::vector<ModelDef> fuzz_test_models() {
  std::vector<ModelDef> out;
  const char* range = std::getenv("RETC_MODULE_FUZZ_MODELS");
  if (!range || !*range) return out;
  const std::string r = range;
  const size_t colon = r.find(':');
  const uint64_t first = std::strtoull(r.substr(0, colon).c_str(), nullptr, 10);
  const int64_t count = colon == std::string::npos ? 1 : std::atoll(r.substr(colon + 1).c_str());
  for (int64_t i = 0; i < count; ++i) {
    const uint64_t seed = first + static_cast<uint64_t>(i);
    ModelDef def;
    def.name = absl::StrCat("fuzz:", seed);
    def.description = "module-API fuzzer model";
    def.build = [seed](Builder& b) { build_fuzz_model(b, seed); };
    def.training = small_training();
    out.push_back(std::move(def));
  }
  return out;
}

}  // namespace retc::testing
