// Module and Parameter: the PyTorch-C++-frontend-shaped model API.
//
//   class Ff : public nn::Module {
//    public:
//     Ff(Dim in, Dim out) : Module("ff") { lin = register_module("lin", std::make_shared<nn::Linear>(in, out)); }
//     nn::Tensor forward(const nn::Tensor& x) { auto s = enter(x); return nn::relu(lin->forward(x)); }
//     std::shared_ptr<nn::Linear> lin;
//   };
//
// A module's params get their paths (`encoder.ff.weight`) when the root
// module is handed to the Builder; checkpoint names derive from those paths.
#pragma once

#include "absl/strings/string_view.h"
#include <functional>
#include <memory>
#include <source_location>
#include <string>
#include <utility>
#include <vector>

#include "compiler/nn/tensor.h"
#include "ir/param.h"

namespace retc::nn {

/// Handle to a module's parameter; options set here end up in the graph.
/// Example: `lin->weight().set_trainable(false);`
class Parameter {
 public:
  Parameter() = default;
  explicit Parameter(std::shared_ptr<ir::Param> p) : p_(std::move(p)) {}

  const ir::Param& ir() const { return *p_; }
  const std::vector<ir::Dim>& dims() const { return p_->dims; }
  ir::ParamKind kind() const { return p_->kind; }
  Parameter& set_initial(ir::Initializer init) {
    p_->options.initial = init;
    return *this;
  }
  Parameter& set_trainable(bool trainable) {
    p_->options.trainable = trainable;
    return *this;
  }
  /// Identity of the underlying param (same for copies of this handle).
  const ir::Param* identity() const { return p_.get(); }

 private:
  friend class Builder;
  friend class Module;
  std::shared_ptr<ir::Param> p_;
};

class Module;

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

  /// `linear`, `lstm`, ...: for messages and pretty_print.
  const std::string& type_name() const { return type_name_; }
  /// Dotted path from the root; set when the root is handed to the Builder.
  const std::string& path() const { return path_; }
  /// `linear 'encoder.ff'` (or `model '<root>'`), for error messages.
  std::string describe() const;
  /// Indented tree of modules and params with their dims.
  std::string pretty_print() const;

 protected:
  /// Opens this module's call scope on the builder of `x`.
  /// Example: `auto scope = enter(x, loc);` at the start of forward().
  ModuleScope enter(const Tensor& x, std::source_location loc = std::source_location::current()) const;

 private:
  friend class Builder;
  void add_child(std::string name, std::shared_ptr<Module> m, std::source_location loc);
  void set_paths(const std::string& path);
  void pretty_print_into(std::string& out, const std::string& name, int indent) const;

  std::string type_name_;
  std::string path_;
  std::vector<std::pair<std::string, Parameter>> params_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
};

/// Whether `name` can name a param or child module: [A-Za-z0-9_]+, so that
/// paths split unambiguously on '.' and map to TF variable scopes.
bool is_valid_member_name(absl::string_view name);

}  // namespace retc::nn
