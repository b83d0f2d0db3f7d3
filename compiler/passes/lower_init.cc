#include "compiler/passes/lower_init.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "ir/diagnostic.h"

namespace retc::passes {

int64_t init_seed(const std::string& path) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : path) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return static_cast<int64_t>((h ^ (h >> 31)) & 0x7fffffff);
}

namespace {

// TF's truncated normal (2 stddevs) has stddev 0.87962566... of the
// untruncated one; variance scaling divides it out.
constexpr double kTruncatedStddevFactor = 0.87962566103423978;

ir::Attrs random_attrs(const ir::Param& p) {
  const ir::Initializer& init = p.options.initial;
  ir::Attrs a;
  a.set<ir::attr::Shape>(p.dims);
  switch (init.kind) {
    case ir::Initializer::Kind::kVarianceScaling: {
      auto [fan_in, fan_out] = ir::fans(p.dims);
      double fan = init.mode == ir::FanMode::kFanIn    ? fan_in
                   : init.mode == ir::FanMode::kFanOut ? fan_out
                                                       : (fan_in + fan_out) / 2.0;
      double var = init.scale / std::max(1.0, fan);
      switch (init.distribution) {
        case ir::Distribution::kUniform: {
          double limit = std::sqrt(3.0 * var);
          a.set<ir::attr::Distribution>(std::string("uniform"));
          a.set<ir::attr::Minval>(-limit);
          a.set<ir::attr::Maxval>(limit);
          break;
        }
        case ir::Distribution::kNormal:
          a.set<ir::attr::Distribution>(std::string("normal"));
          a.set<ir::attr::Mean>(0.0);
          a.set<ir::attr::Stddev>(std::sqrt(var));
          break;
        case ir::Distribution::kTruncatedNormal:
          a.set<ir::attr::Distribution>(std::string("truncated_normal"));
          a.set<ir::attr::Mean>(0.0);
          a.set<ir::attr::Stddev>(std::sqrt(var) / kTruncatedStddevFactor);
          break;
      }
      break;
    }
    case ir::Initializer::Kind::kNormal:
      a.set<ir::attr::Distribution>(std::string("normal"));
      a.set<ir::attr::Mean>(init.mean);
      a.set<ir::attr::Stddev>(init.stddev);
      break;
    case ir::Initializer::Kind::kUniform:
      a.set<ir::attr::Distribution>(std::string("uniform"));
      a.set<ir::attr::Minval>(init.minval);
      a.set<ir::attr::Maxval>(init.maxval);
      break;
    case ir::Initializer::Kind::kConstant:
    case ir::Initializer::Kind::kSubgraph:
      break;
  }
  a.set<ir::attr::Seed>(init_seed(p.path));
  return a;
}

std::string module_of(const std::string& path) {
  size_t dot = path.rfind('.');
  return dot == std::string::npos ? "" : path.substr(0, dot);
}

}  // namespace

absl::StatusOr<bool> lower_init(ir::Graph& g, const LowerInitOptions&) {
  bool changed = false;
  for (size_t i = 0; i < g.params().size(); ++i) {
    ir::ParamId pid{static_cast<int32_t>(i)};
    const ir::Param& p = g.param(pid);
    if (p.options.init_node >= 0) continue;
    switch (p.options.initial.kind) {
      case ir::Initializer::Kind::kConstant:
        continue;
      case ir::Initializer::Kind::kSubgraph:
        g.mutable_param(pid).options.init_node = p.options.initial.node;
        changed = true;
        continue;
      case ir::Initializer::Kind::kVarianceScaling:
      case ir::Initializer::Kind::kNormal:
      case ir::Initializer::Kind::kUniform:
        break;
    }
    ir::NodeSpec spec;
    spec.attrs = random_attrs(p);
    spec.loc = p.loc;
    spec.module_path = module_of(p.path);
    spec.stage = ir::Stage::kParamInit;
    auto id = g.add(ir::NodeKind::kRandom, {}, std::move(spec));
    if (!id.ok()) {
      return ir::user_error(p.loc, absl::StrCat("param '", p.path, "': ", id.status().message()));
    }
    g.mutable_param(pid).options.init_node = id->index;
    changed = true;
  }
  return changed;
}

}  // namespace retc::passes
