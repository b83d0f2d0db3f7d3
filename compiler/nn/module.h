// Module and Parameter: the PyTorch-C++-frontend-shaped model API.
//
//   class Ff : public nn::Module {
//    public:
//     Ff(Dim in, Dim out) : Module("ff") { lin = register_module("lin",
//     std::make_shared<nn::Linear>(in, out)); } nn::Tensor forward(const nn::Tensor& x) { auto s =
//     enter(x); return nn::relu(lin->forward(x)); } std::shared_ptr<nn::Linear> lin;
//   };
//
// A module's params get their paths (`encoder.ff.weight`) when the root
// module is handed to the Builder; checkpoint names derive from those paths.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <source_location>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "compiler/nn/parameter.h"
#include "compiler/nn/tensor.h"

namespace retc::nn {

class Module;
class Builder;

/// RAII: while alive, nodes created are attributed to a module call.
class ModuleScope {
 public:
  ModuleScope(Builder* b, const Module& m, const ir::SourceLoc& loc);
  ~ModuleScope();
  ModuleScope(const ModuleScope&) = delete;
  ModuleScope& operator=(const ModuleScope&) = delete;

 private:
  Builder* builder_;
};

class Module {
 public:
  explicit Module(std::string type_name) : type_name_(std::move(type_name)) {}
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  /// Creates and registers a parameter. `name` must be a plain identifier.
  Parameter register_parameter(std::string name, std::vector<ir::Dim> dims, ir::ParamKind kind,
                               ir::Initializer init,
                               std::source_location loc = std::source_location::current());
  /// The same, with the kind's default initializer (ir::default_initializer).
  /// Example: `bias_ = register_parameter("bias", {out}, ir::ParamKind::kBias);`
  Parameter register_parameter(std::string name, std::vector<ir::Dim> dims, ir::ParamKind kind,
                               std::source_location loc = std::source_location::current()) {
    return register_parameter(std::move(name), std::move(dims), kind, ir::default_initializer(kind),
                              loc);
  }

  /// Registers a child module under `name` and returns it.
  template <class M>
  std::shared_ptr<M> register_module(std::string name, std::shared_ptr<M> m,
                                     std::source_location loc = std::source_location::current()) {
    add_child(std::move(name), m, loc);
    return m;
  }

  /// Own params first, then children's, recursively; paths dotted from here.
  std::vector<std::pair<std::string, Parameter>> named_parameters() const;
  /// This module (path "") and all descendants, pre-order.
  std::vector<std::pair<std::string, const Module*>> named_modules() const;
  /// Calls `fn` on every descendant and then on this module (post-order).
  void apply(const std::function<void(Module&)>& fn);
  /// Overrides options of every param that `filter` matches, after
  /// construction: beats module defaults, never an explicit setting.
  /// Example: `model->apply_params({ir::ParamKind::kBias}, [](auto&, auto& p) {
  /// p.set_initial(ir::Initializer::constant(0)); });`
  void apply_params(const ParamFilter& filter,
                    const std::function<void(const std::string& path, ParamSetter& p)>& fn);
  /// The param registered here as `name`, or nullptr.
  Parameter* find_parameter(const std::string& name);

  /// Runs before forward() and may replace its input.
  using ForwardPreHook = std::function<Tensor(const Module&, const Tensor& input)>;
  /// Runs after forward() and may replace its output.
  using ForwardHook =
      std::function<Tensor(const Module&, const Tensor& input, const Tensor& output)>;
  /// Hooks on this module's calls, in registration order; they run inside
  /// the module's scope. Returns a handle for remove_hook.
  /// Example: `lin->register_forward_hook([](auto&, auto&, const nn::Tensor& y) { return
  /// nn::dropout(y, 0.1); });`
  int register_forward_pre_hook(ForwardPreHook hook);
  int register_forward_hook(ForwardHook hook);
  /// Removes a hook; returns whether the handle was registered.
  bool remove_hook(int handle);

  /// In a constructor: options that make no model (a key dim the heads do not
  /// divide, a stride of 0). A constructor has no caller's line (make_shared
  /// calls it), so the error is reported at the line that registers the module
  /// (register_module, Builder::set_root, Sequential::append), which is the
  /// constructor's line in the usual `register_module("x", make_shared<X>(...))`,
  /// or at its first call; the module is unusable until then. The first
  /// rejection counts. A module whose child was rejected is rejected with it.
  void reject(std::string message);
  /// Fails at `loc` if this module was rejected.
  void check_not_rejected(const ir::SourceLoc& loc) const;

  /// `linear`, `lstm`, ...: for messages and pretty_print.
  const std::string& type_name() const { return type_name_; }
  /// Dotted path from the root; set when the root is handed to the Builder.
  const std::string& path() const { return path_; }
  /// `linear 'encoder.ff'` (or `model '<root>'`), for error messages.
  std::string describe() const;
  /// Where nn::checkpoint asked for this module's gradient checkpointing; empty if not.
  const std::optional<ir::SourceLoc>& checkpoint_at() const { return checkpoint_at_; }
  /// Indented tree of modules and params with their dims.
  std::string pretty_print() const;

 protected:
  /// A setter at the lowest precedence, for a module's own defaults (e.g.
  /// BatchNorm's running statistics are not trainable unless the user says so).
  static ParamSetter default_options(Parameter& p) {
    return ParamSetter(p.s_, OptionSource::kDefault);
  }
  /// Opens this module's call scope on the builder of `x`.
  /// Example: `auto scope = enter(x, loc);` at the start of forward().
  ModuleScope enter(const Tensor& x,
                    std::source_location loc = std::source_location::current()) const;

  /// A module call: opens the scope, runs the pre-hooks on `x`, then
  /// `forward(x')`, then the hooks on the output. Modules implement their
  /// forward() through it so that hooks apply:
  ///   `return call(x, loc, [&](const nn::Tensor& x) { return ...; });`
  template <class F>
  Tensor call(const Tensor& x, std::source_location loc, F&& forward) const {
    auto scope = enter(x, loc);
    Tensor in = x;
    for (const auto& [id, hook] : pre_hooks_) in = hook(*this, in);
    Tensor out = forward(in);
    for (const auto& [id, hook] : hooks_) out = hook(*this, in, out);
    return out;
  }

 private:
  friend class Builder;
  void add_child(std::string name, std::shared_ptr<Module> m, std::source_location loc);
  /// Sets every path from here; `root_loc`: the set_root call, after which
  /// registering a module or parameter is an error at its line.
  void set_paths(const std::string& path, const ir::SourceLoc& root_loc);
  /// Fails at `loc` if the model was already handed to Builder::set_root.
  void check_not_rooted(const ir::SourceLoc& loc, absl::string_view what) const;
  /// Params whose location is inside retc's own modules (a Linear's
  /// register_parameter call) take `loc`, where the user registered the
  /// module; so does a checkpoint that a module of retc's asked for.
  void attribute_to(const ir::SourceLoc& loc);
  void pretty_print_into(std::string& out, const std::string& name, int indent) const;

  std::string type_name_;
  std::string path_;
  std::optional<ir::SourceLoc> rooted_at_;
  std::optional<ir::SourceLoc> checkpoint_at_;
  std::optional<std::string> rejected_;
  std::vector<std::pair<std::string, Parameter>> params_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  std::vector<std::pair<int, ForwardPreHook>> pre_hooks_;
  std::vector<std::pair<int, ForwardHook>> hooks_;
  int next_hook_ = 0;
  /// How nn::make made this module (for nn::clone); empty otherwise.
  std::function<std::shared_ptr<Module>()> factory_;

  template <class M, class... Args>
  friend std::shared_ptr<M> make(Args&&... args);
  friend std::shared_ptr<Module> clone_module(const Module& m, const ir::SourceLoc& loc);
  friend void checkpoint(Module& m, std::source_location loc);
};

/// Gradient checkpointing of `m`: the activations its calls compute (its own
/// and its submodules') are not kept for the backward pass but computed again
/// there, with the same random numbers: less memory for more compute, the
/// same losses and gradients. The torch target runs each call's ops in
/// RETURNN's `rf.gradient_checkpoint_scope()`; the tf target has no such
/// option for a net dict's layers and gives an error naming it. Not the root
/// module (checkpoint its submodules). Clones keep it.
/// Example: `for (auto& block : blocks) nn::checkpoint(*block);`
void checkpoint(Module& m, std::source_location loc = std::source_location::current());

/// std::make_shared<M>(args...) that also keeps a copy of the arguments, so
/// that nn::clone can construct another M from them.
/// Example: `auto block = nn::make<Block>(model, ff);`
template <class M, class... Args>
std::shared_ptr<M> make(Args&&... args) {
  auto factory = [... a = std::decay_t<Args>(args)]() -> std::shared_ptr<Module> {
    return std::make_shared<M>(a...);
  };
  std::shared_ptr<M> m = std::static_pointer_cast<M>(factory());
  m->factory_ = std::move(factory);
  return m;
}

/// The implementation of nn::clone.
std::shared_ptr<Module> clone_module(const Module& m, const ir::SourceLoc& loc);

/// A copy of `m` (made by nn::make) with params of its own: the constructor
/// runs again on the same arguments, then each param takes the options set
/// on m's (initial value, weight decay, trainable, learning-rate factor,
/// clipping, device, dtype, weight dropout and noise) and the copy m's
/// hooks. The copy's params are new variables, so their random initial
/// values differ from m's (returnn_common's deepcopy of a module; torch's
/// Cloneable). What was added to m after its constructor is not copied:
/// clone fails if m's params differ from those its constructor makes (a
/// module registered later, a weight norm's `_g`: weight-norm the copy).
/// Example: `for (int i = 0; i < 3; ++i) seq->append(nn::clone(layer));`
template <class M>
std::shared_ptr<M> clone(const std::shared_ptr<M>& m,
                         std::source_location loc = std::source_location::current()) {
  return std::static_pointer_cast<M>(clone_module(*m, ir::SourceLoc::from(loc)));
}

/// Whether `name` can name a param or child module: [A-Za-z0-9_]+, so that
/// paths split unambiguously on '.' and map to TF variable scopes.
bool is_valid_member_name(absl::string_view name);

}  // namespace retc::nn
