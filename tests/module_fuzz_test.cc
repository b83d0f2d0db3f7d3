// A fuzzer of the module API: random options and sizes (zeros, negatives,
// NaN, infinities, huge sizes among them) into the public module
// constructors and ops, each in a small model (tests/module_fuzz_models.cc;
// the models retc accepts also run in RETURNN on both targets: test_modules.py's
// module_fuzz). Every configuration must give
// a model, or an error at a line of module_fuzz_models.cc (the model code's line); none
// may crash (the sanitizer run in CI runs this under ASan). A model built is
// compiled for both targets: a config, or an error that names the target.
// RETC_MODULE_FUZZ_RUNS=N sets the number of configurations (default 1500),
// RETC_MODULE_FUZZ_SEED the first seed.
#include <catch2/catch.hpp>
#include <cstdlib>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "emit/model.h"
#include "emit/target.h"
#include "emit/tf/target.h"
#include "emit/torch/target.h"
#include "tests/test_models.h"

namespace retc::testing {
namespace {

using nn::Builder;

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
    def.build = [seed](Builder& b) { build_fuzz_model(b, seed); };
    INFO("seed " << seed);
    auto g = build_model(def);
    if (!g.ok()) {
      ++rejected;
      const std::string msg(g.status().message());
      INFO(msg);
      CHECK(absl::StrContains(msg, "module_fuzz_models.cc:"));
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
      CHECK((absl::StrContains(msg, "module_fuzz_models.cc:") ||
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
