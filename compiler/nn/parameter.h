// Parameter: the handle to a module's param, its option setters with their
// precedence (OptionSource), and the dtype / device scopes for defaults.
#pragma once

#include <memory>
#include <optional>
#include <source_location>
#include <string>
#include <vector>

#include "compiler/nn/tensor.h"
#include "ir/param.h"

namespace retc::nn {

class Builder;
class Module;

/// Who set a param option; a setting only replaces one of the same or a
/// lower source. Module defaults (and dtype/device scopes) < apply_params <
/// explicit settings on the param.
enum class OptionSource { kDefault, kApply, kExplicit };

/// A reparametrization registered on a param (see parametrize.h).
struct Parametrization {
  enum class Kind { kWeightNorm, kWeightDropout, kWeightNoise };
  Kind kind;
  std::vector<ir::Dim> axes;  ///< weight norm: the axes ‖·‖ reduces
  double value = 0.0;         ///< dropout rate, or noise stddev
  ir::SourceLoc loc;
};

/// What a Parameter handle refers to.
struct ParamState {
  ir::Param param;
  struct Sources {
    OptionSource initial = OptionSource::kDefault, trainable = OptionSource::kDefault,
                 weight_decay = OptionSource::kDefault, lr_multiplier = OptionSource::kDefault,
                 gradient_clip = OptionSource::kDefault, device = OptionSource::kDefault,
                 dtype = OptionSource::kDefault;
  } sources;
  /// Where each option was last set (empty: never explicitly), for errors.
  struct Locs {
    ir::SourceLoc initial, trainable, weight_decay, lr_multiplier, gradient_clip, device, dtype;
  } locs;
  std::vector<Parametrization> parametrizations;
  /// Set once the root is set: dims, dtype and parametrizations are fixed.
  bool frozen = false;
};

/// How weight decay acts; see ir::WeightDecay for the exact updates.
enum class WeightDecayMode { kDecoupled, kCoupled };

/// Sets a param's options at one precedence level (OptionSource).
/// Parameter's setters are explicit; apply_params hands out kApply ones.
class ParamSetter {
 public:
  ParamSetter(std::shared_ptr<ParamState> s, OptionSource source)
      : s_(std::move(s)), source_(source) {}

  // Each setter takes the caller's location last: an error about the option
  // (checked when the model is finished) names the line that set it.
  ParamSetter& set_initial(ir::Initializer init,
                           std::source_location loc = std::source_location::current());
  /// A user's param-init subgraph (random, constants and arithmetic on them),
  /// evaluated once; its dims must equal the param's.
  ParamSetter& set_initial(const Tensor& value,
                           std::source_location loc = std::source_location::current());
  ParamSetter& set_trainable(bool trainable,
                             std::source_location loc = std::source_location::current());
  /// Example: `p.set_weight_decay(1e-4)` (decoupled, AdamW-like).
  ParamSetter& set_weight_decay(double lambda, WeightDecayMode mode = WeightDecayMode::kDecoupled,
                                std::source_location loc = std::source_location::current());
  ParamSetter& set_lr_multiplier(double k,
                                 std::source_location loc = std::source_location::current());
  /// Clips each gradient entry to [-c, c].
  ParamSetter& set_gradient_clip(double c,
                                 std::source_location loc = std::source_location::current());
  /// The device to keep the param on, e.g. "CPU" (TF: RETURNN's `param_device`).
  ParamSetter& set_device(std::string device,
                          std::source_location loc = std::source_location::current());
  /// Only before set_root (the dtype is part of the param's type).
  ParamSetter& set_dtype(ir::DType dtype,
                         std::source_location loc = std::source_location::current());

 protected:
  std::shared_ptr<ParamState> s_;
  OptionSource source_;
};

/// Handle to a module's parameter; options set here are explicit and beat
/// module defaults and apply_params. Example: `lin->weight().set_trainable(false);`
class Parameter : public ParamSetter {
 public:
  Parameter() : ParamSetter(nullptr, OptionSource::kExplicit) {}
  explicit Parameter(std::shared_ptr<ParamState> s)
      : ParamSetter(std::move(s), OptionSource::kExplicit) {}
  Parameter(const Parameter&) = default;
  Parameter(Parameter&&) = default;
  /// A module's param is not assignable from another's: `b->weight() =
  /// a->weight()` would silently make b compute with a's param while b's own
  /// stays registered (tie weights by computing with the other's, e.g.
  /// `nn::dot(x, b.param(a->weight()), ...)`). A new handle (a constructor
  /// storing what register_parameter returned) can be moved in.
  Parameter& operator=(const Parameter&) = delete;
  Parameter& operator=(Parameter&&) = default;

  const ir::Param& ir() const { return s_->param; }
  const std::vector<ir::Dim>& dims() const { return s_->param.dims; }
  ir::ParamKind kind() const { return s_->param.kind; }
  const ParamState::Sources& sources() const { return s_->sources; }
  const std::vector<Parametrization>& parametrizations() const { return s_->parametrizations; }
  bool is_parametrized() const { return !s_->parametrizations.empty(); }
  /// Identity of the underlying param (same for copies of this handle).
  const void* identity() const { return s_.get(); }
  bool defined() const { return s_ != nullptr; }

 private:
  friend class Builder;
  friend class Module;
  friend ParamState& state(Parameter& p);
};

/// The state behind a handle (for parametrize.cc).
ParamState& state(Parameter& p);

/// Assigns `p` in each training step (not in evaluation, forward or search):
/// once the step has read `p` everywhere (its reads in the step see the old
/// value), `p` becomes `value`, computed in the step from the params as the
/// step read them (before the optimizer updates them). Outside loops and
/// conds; `p` must be set_trainable(false) and not reparametrized, `value` of
/// its dims and dtype. Example, an exponential moving average of a weight:
/// `nn::assign_add(ema, (b.param(w) - b.param(ema)) * nn::constant(b, 1 - decay))`.
/// TF: the variable's assign op, run with the step as RETURNN runs its batch
/// norm's statistics update; torch: an in-place write after the step's code.
void assign(const Parameter& p, const Tensor& value,
            std::source_location loc = std::source_location::current());
/// `p` += `delta` in each training step, as assign.
void assign_add(const Parameter& p, const Tensor& delta,
                std::source_location loc = std::source_location::current());

/// Which params apply_params touches: all, or those of one kind and/or
/// whose path starts with a prefix (relative to the module it is called on).
struct ParamFilter {
  std::optional<ir::ParamKind> kind;
  std::string path_prefix;
  bool matches(const std::string& path, ir::ParamKind k) const;
};

/// RAII: params created while alive get this dtype / device by default
/// (innermost scope wins; apply_params and explicit settings beat it).
/// Example: `{ nn::DTypeScope s(ir::DType::kFloat16); enc = make_shared<Enc>(...); }`
class DTypeScope {
 public:
  explicit DTypeScope(ir::DType dtype);
  ~DTypeScope();
  DTypeScope(const DTypeScope&) = delete;
  DTypeScope& operator=(const DTypeScope&) = delete;
};
class DeviceScope {
 public:
  explicit DeviceScope(std::string device);
  ~DeviceScope();
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;
};

/// The dtype and device of the innermost DTypeScope / DeviceScope, if any
/// (defaults for params created now).
std::optional<ir::DType> scoped_dtype();
std::optional<std::string> scoped_device();

}  // namespace retc::nn
