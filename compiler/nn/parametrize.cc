#include "compiler/nn/parametrize.h"

#include "absl/strings/str_cat.h"
#include "compiler/nn/error.h"

namespace retc::nn {
namespace {

ParamState& param_state(Module& m, const std::string& name, const ir::SourceLoc& loc) {
  Parameter* p = m.find_parameter(name);
  if (!p) {
    fail(loc, absl::StrCat(m.describe(), ": has no parameter '", name,
                           "'; reparametrizations apply to parameters only"));
  }
  return state(*p);
}

ParamState& mutable_state(Module& m, const std::string& name, const ir::SourceLoc& loc) {
  ParamState& s = param_state(m, name, loc);
  if (s.frozen) {
    fail(loc,
         absl::StrCat(
             m.describe(), ": parameter '", name,
             "' is already part of a built model; register reparametrizations before set_root"));
  }
  return s;
}

void add(Module& m, const std::string& name, Parametrization r) {
  ParamState& s = mutable_state(m, name, r.loc);
  for (const Parametrization& old : s.parametrizations) {
    if (old.kind == r.kind) {
      const char* what = r.kind == Parametrization::Kind::kWeightNorm      ? "weight norm"
                         : r.kind == Parametrization::Kind::kWeightDropout ? "weight dropout"
                                                                           : "weight noise";
      fail(r.loc, absl::StrCat(m.describe(), ": parameter '", name, "' already has ", what, "\n",
                               old.loc.str(), ": note: registered here"));
    }
  }
  s.parametrizations.push_back(std::move(r));
}

}  // namespace

void weight_norm(Module& m, const std::string& param, std::vector<ir::Dim> axes,
                 std::source_location loc) {
  ir::SourceLoc l = ir::SourceLoc::from(loc);
  const std::vector<ir::Dim>& dims = param_state(m, param, l).param.dims;
  if (axes.empty()) {
    if (dims.size() < 2) {
      fail(l, absl::StrCat(m.describe(), ": weight norm of '", param, "' with dims ",
                           ir::describe(dims), " needs explicit norm axes"));
    }
    axes.assign(dims.begin(), dims.end() - 1);
  }
  for (const ir::Dim& a : axes) {
    if (ir::index_of(dims, a) < 0) {
      fail(l, absl::StrCat(m.describe(), ": weight norm axis ", a.describe(), " is not a dim of '",
                           param, "' ", ir::describe(dims)));
    }
  }
  add(m, param, Parametrization{Parametrization::Kind::kWeightNorm, std::move(axes), 0.0, l});
}

void weight_dropout(Module& m, const std::string& param, double rate, std::source_location loc) {
  ir::SourceLoc l = ir::SourceLoc::from(loc);
  if (!(rate >= 0.0 && rate < 1.0)) {
    fail(l, absl::StrCat(m.describe(), ": weight dropout rate must be in [0, 1), got ", rate));
  }
  add(m, param, Parametrization{Parametrization::Kind::kWeightDropout, {}, rate, l});
}

void weight_noise(Module& m, const std::string& param, double stddev, std::source_location loc) {
  ir::SourceLoc l = ir::SourceLoc::from(loc);
  if (!(stddev >= 0.0)) {
    fail(l, absl::StrCat(m.describe(), ": weight noise stddev must not be negative, got ", stddev));
  }
  add(m, param, Parametrization{Parametrization::Kind::kWeightNoise, {}, stddev, l});
}

bool is_parametrized(Module& m, const std::string& param, std::source_location loc) {
  return !param_state(m, param, ir::SourceLoc::from(loc)).parametrizations.empty();
}

void remove_parametrizations(Module& m, const std::string& param, std::source_location loc) {
  mutable_state(m, param, ir::SourceLoc::from(loc)).parametrizations.clear();
}

}  // namespace retc::nn
