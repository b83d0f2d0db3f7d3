#include "compiler/nn/parameter.h"

#include "absl/strings/str_cat.h"
#include "compiler/nn/builder.h"
#include "compiler/nn/error.h"

namespace retc::nn {
namespace {

// Construction-time defaults of the innermost DTypeScope / DeviceScope.
// Per thread, like PyTorch's default dtype: model construction on one thread
// never sees another's scopes.
thread_local std::vector<ir::DType> dtype_scopes;
thread_local std::vector<std::string> device_scopes;

}  // namespace

std::optional<ir::DType> scoped_dtype() {
  if (dtype_scopes.empty()) return std::nullopt;
  return dtype_scopes.back();
}

std::optional<std::string> scoped_device() {
  if (device_scopes.empty()) return std::nullopt;
  return device_scopes.back();
}

bool ParamFilter::matches(const std::string& path, ir::ParamKind k) const {
  if (kind && *kind != k) return false;
  if (path_prefix.empty()) return true;
  if (!path.starts_with(path_prefix)) return false;
  // Whole components only: prefix "enc" matches "enc.w" and "enc", not "encoder.w".
  return path.size() == path_prefix.size() || path[path_prefix.size()] == '.' ||
         path_prefix.back() == '.';
}

ParamState& state(Parameter& p) { return *p.s_; }

namespace {

// Takes the option if `source` may replace the current one, recording
// where it was set.
bool take_option(OptionSource& current, ir::SourceLoc& where, OptionSource incoming,
                 std::source_location loc) {
  if (incoming < current) return false;
  current = incoming;
  where = ir::SourceLoc::from(loc);
  return true;
}

}  // namespace

ParamSetter& ParamSetter::set_initial(ir::Initializer init, std::source_location loc) {
  if (take_option(s_->sources.initial, s_->locs.initial, source_, loc))
    s_->param.options.initial = init;
  return *this;
}

ParamSetter& ParamSetter::set_initial(const Tensor& value, std::source_location loc) {
  ir::SourceLoc l = ir::SourceLoc::from(loc);
  if (!value.defined())
    fail(l, absl::StrCat("param '", s_->param.path, "': initial value is undefined"));
  if (value.dims() != s_->param.dims) {
    fail(l, absl::StrCat("param '", s_->param.path, "': initial value has dims ",
                         ir::describe(value.dims()), ", expected ", ir::describe(s_->param.dims)));
  }
  if (value.type().dtype != s_->param.dtype) {
    fail(l, absl::StrCat("param '", s_->param.path, "': initial value has dtype ",
                         ir::dtype_name(value.type().dtype), ", expected ",
                         ir::dtype_name(s_->param.dtype)));
  }
  if (take_option(s_->sources.initial, s_->locs.initial, source_, loc)) {
    ir::Initializer init;
    init.kind = ir::Initializer::Kind::kSubgraph;
    init.node = value.id().index;
    s_->param.options.initial = init;
  }
  return *this;
}

ParamSetter& ParamSetter::set_trainable(bool trainable, std::source_location loc) {
  if (take_option(s_->sources.trainable, s_->locs.trainable, source_, loc))
    s_->param.options.trainable = trainable;
  return *this;
}

ParamSetter& ParamSetter::set_weight_decay(double lambda, WeightDecayMode mode,
                                           std::source_location loc) {
  if (take_option(s_->sources.weight_decay, s_->locs.weight_decay, source_, loc)) {
    s_->param.options.weight_decay = ir::WeightDecay{lambda, mode == WeightDecayMode::kCoupled};
  }
  return *this;
}

ParamSetter& ParamSetter::set_lr_multiplier(double k, std::source_location loc) {
  if (take_option(s_->sources.lr_multiplier, s_->locs.lr_multiplier, source_, loc))
    s_->param.options.lr_multiplier = k;
  return *this;
}

ParamSetter& ParamSetter::set_gradient_clip(double c, std::source_location loc) {
  if (take_option(s_->sources.gradient_clip, s_->locs.gradient_clip, source_, loc))
    s_->param.options.gradient_clip = c;
  return *this;
}

ParamSetter& ParamSetter::set_device(std::string device, std::source_location loc) {
  if (take_option(s_->sources.device, s_->locs.device, source_, loc))
    s_->param.options.device = std::move(device);
  return *this;
}

ParamSetter& ParamSetter::set_dtype(ir::DType dtype, std::source_location loc) {
  if (s_->frozen) {
    fail(ir::SourceLoc::from(loc),
         absl::StrCat("param '", s_->param.path, "': the dtype must be set before set_root"));
  }
  if (take_option(s_->sources.dtype, s_->locs.dtype, source_, loc)) s_->param.dtype = dtype;
  return *this;
}

DTypeScope::DTypeScope(ir::DType dtype) { dtype_scopes.push_back(dtype); }
DTypeScope::~DTypeScope() { dtype_scopes.pop_back(); }
DeviceScope::DeviceScope(std::string device) { device_scopes.push_back(std::move(device)); }
DeviceScope::~DeviceScope() { device_scopes.pop_back(); }

namespace {

void assign_param(const Parameter& p, const Tensor& value, const char* op, std::string mode,
                  std::source_location loc) {
  const ir::SourceLoc at = ir::SourceLoc::from(loc);
  if (!p.defined()) fail(at, absl::StrCat(op, ": the parameter is undefined"));
  if (!value.defined()) fail(at, absl::StrCat(op, ": the value is undefined"));
  value.builder().add_assign(p, value, std::move(mode), at);
}

}  // namespace

void assign(const Parameter& p, const Tensor& value, std::source_location loc) {
  assign_param(p, value, "assign", "assign", loc);
}

void assign_add(const Parameter& p, const Tensor& delta, std::source_location loc) {
  assign_param(p, delta, "assign_add", "add", loc);
}

}  // namespace retc::nn
