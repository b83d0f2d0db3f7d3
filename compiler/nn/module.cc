#include "absl/strings/string_view.h"
#include "compiler/nn/module.h"

#include "absl/strings/str_cat.h"
#include "compiler/nn/builder.h"
#include "compiler/nn/error.h"

namespace retc::nn {

bool is_valid_member_name(absl::string_view name) {
  if (name.empty()) return false;
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    if (!ok) return false;
  }
  return true;
}

namespace {

void check_member_name(const Module& m, absl::string_view name, absl::string_view what,
                       const ir::SourceLoc& loc) {
  if (!is_valid_member_name(name)) {
    fail(loc, absl::StrCat(m.type_name(), ": ", what, " name '", name,
                           "' is invalid; expected letters, digits and '_' only"));
  }
}

}  // namespace

Parameter Module::register_parameter(std::string name, std::vector<ir::Dim> dims,
                                     ir::ParamKind kind, ir::Initializer init,
                                     std::source_location loc) {
  ir::SourceLoc l = ir::SourceLoc::from(loc);
  check_member_name(*this, name, "parameter", l);
  for (const auto& [n, p] : params_) {
    if (n == name) fail(l, absl::StrCat(type_name_, ": parameter '", name, "' is registered twice"));
  }
  for (const ir::Dim& d : dims) {
    if (d.is_batch() || d.is_dynamic()) {
      fail(l, absl::StrCat(type_name_, ": parameter '", name, "' needs static dims, got ",
                           d.describe()));
    }
  }
  auto p = std::make_shared<ir::Param>();
  p->path = name;
  p->dims = std::move(dims);
  p->kind = kind;
  p->options.initial = init;
  p->loc = l;
  params_.emplace_back(std::move(name), Parameter(p));
  return params_.back().second;
}

void Module::add_child(std::string name, std::shared_ptr<Module> m, std::source_location loc) {
  ir::SourceLoc l = ir::SourceLoc::from(loc);
  check_member_name(*this, name, "module", l);
  if (!m) fail(l, absl::StrCat(type_name_, ": module '", name, "' is null"));
  for (const auto& [n, c] : children_) {
    if (n == name) fail(l, absl::StrCat(type_name_, ": module '", name, "' is registered twice"));
  }
  for (const auto& [n, p] : params_) {
    if (n == name) {
      fail(l, absl::StrCat(type_name_, ": module '", name, "' clashes with a parameter name"));
    }
  }
  children_.emplace_back(std::move(name), std::move(m));
}

std::vector<std::pair<std::string, Parameter>> Module::named_parameters() const {
  std::vector<std::pair<std::string, Parameter>> out;
  for (const auto& [prefix, m] : named_modules()) {
    for (const auto& [n, p] : m->params_) {
      out.emplace_back(prefix.empty() ? n : prefix + "." + n, p);
    }
  }
  return out;
}

std::vector<std::pair<std::string, const Module*>> Module::named_modules() const {
  std::vector<std::pair<std::string, const Module*>> out = {{"", this}};
  for (const auto& [n, c] : children_) {
    for (auto& [sub, m] : c->named_modules()) {
      out.emplace_back(sub.empty() ? n : n + "." + sub, m);
    }
  }
  return out;
}

void Module::apply(const std::function<void(Module&)>& fn) {
  for (auto& [n, c] : children_) c->apply(fn);
  fn(*this);
}

std::string Module::describe() const {
  return absl::StrCat(type_name_, " '", path_.empty() ? "<root>" : path_, "'");
}

void Module::set_paths(const std::string& path) {
  path_ = path;
  for (auto& [n, p] : params_) p.p_->path = path.empty() ? n : path + "." + n;
  for (auto& [n, c] : children_) c->set_paths(path.empty() ? n : path + "." + n);
}

std::string Module::pretty_print() const {
  std::string out;
  pretty_print_into(out, "", 0);
  return out;
}

void Module::pretty_print_into(std::string& out, const std::string& name, int indent) const {
  std::string pad(indent * 2, ' ');
  absl::StrAppend(&out, pad, name.empty() ? "" : name + ": ", type_name_, "\n");
  for (const auto& [n, p] : params_) {
    absl::StrAppend(&out, pad, "  ", n, ": ", ir::describe(p.dims()), " ",
                    ir::param_kind_name(p.kind()), "\n");
  }
  for (const auto& [n, c] : children_) c->pretty_print_into(out, n, indent + 1);
}

ModuleScope Module::enter(const Tensor& x, std::source_location loc) const {
  if (!x.defined()) fail(ir::SourceLoc::from(loc), absl::StrCat(describe(), ": input tensor is undefined"));
  return ModuleScope(&x.builder(), *this, ir::SourceLoc::from(loc));
}

ModuleScope::ModuleScope(Builder* b, const Module& m, const ir::SourceLoc& loc) : builder_(b) {
  builder_->scopes_.push_back(Builder::Scope{&m, loc});
}

ModuleScope::~ModuleScope() { builder_->scopes_.pop_back(); }

}  // namespace retc::nn
