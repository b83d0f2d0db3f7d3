#include "compiler/nn/module.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/nn/builder.h"
#include "compiler/nn/error.h"
#include "ir/format.h"

namespace retc::nn {

bool is_valid_member_name(absl::string_view name) {
  if (name.empty()) return false;
  for (char c : name) {
    bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    if (!ok) return false;
  }
  return true;
}

namespace {

void check_member_name(const Module& m, absl::string_view name, absl::string_view what,
                       const ir::SourceLoc& loc) {
  if (!is_valid_member_name(name)) {
    fail(loc, absl::StrCat(ir::printable(m.type_name()), ": ", what, " name '", ir::printable(name),
                           "' is invalid; expected letters, digits and '_' only"));
  }
}

}  // namespace

Parameter Module::register_parameter(std::string name, std::vector<ir::Dim> dims,
                                     ir::ParamKind kind, ir::Initializer init,
                                     std::source_location loc) {
  ir::SourceLoc l = ir::SourceLoc::from(loc);
  check_member_name(*this, name, "parameter", l);
  check_not_rooted(l, absl::StrCat("parameter '", name, "'"));
  for (const auto& [n, p] : params_) {
    if (n == name)
      fail(l, absl::StrCat(type_name_, ": parameter '", name, "' is registered twice"));
  }
  for (const ir::Dim& d : dims) {
    if (d.is_batch() || d.is_dynamic()) {
      fail(l, absl::StrCat(type_name_, ": parameter '", name, "' needs static dims, got ",
                           d.describe()));
    }
  }
  auto s = std::make_shared<ParamState>();
  ir::Param& p = s->param;
  p.path = name;
  p.dims = std::move(dims);
  p.kind = kind;
  p.options.initial = init;
  p.loc = l;
  if (auto dtype = scoped_dtype()) p.dtype = *dtype;
  if (auto device = scoped_device()) p.options.device = *device;
  params_.emplace_back(std::move(name), Parameter(s));
  return params_.back().second;
}

// The directory of retc's model API sources. Locations inside it (e.g. a
// Linear's own register_parameter call) are not the user's code.
bool is_library_loc(const ir::SourceLoc& loc) {
  static const std::string kDir = [] {
    std::string f = std::source_location::current().file_name();
    return f.substr(0, f.rfind('/') + 1);
  }();
  return loc.file.empty() || loc.file.starts_with(kDir) || loc.file.starts_with("/usr/include/");
}

void Module::attribute_to(const ir::SourceLoc& loc) {
  if (is_library_loc(loc)) return;
  for (auto& [n, p] : params_) {
    if (is_library_loc(p.s_->param.loc)) p.s_->param.loc = loc;
  }
  if (checkpoint_at_ && is_library_loc(*checkpoint_at_)) checkpoint_at_ = loc;
  for (auto& [n, c] : children_) c->attribute_to(loc);
}

void Module::reject(std::string message) {
  if (!rejected_) rejected_ = std::move(message);
}

void Module::check_not_rejected(const ir::SourceLoc& loc) const {
  if (rejected_) fail(loc, *rejected_);
}

void Module::add_child(std::string name, std::shared_ptr<Module> m, std::source_location loc) {
  ir::SourceLoc l = ir::SourceLoc::from(loc);
  check_member_name(*this, name, "module", l);
  check_not_rooted(l, absl::StrCat("module '", name, "'"));
  if (!m) fail(l, absl::StrCat(type_name_, ": module '", name, "' is null"));
  if (m->rejected_) {
    // Registered by one of retc's modules in its constructor: the user's line
    // is where that module is registered.
    if (!is_library_loc(l)) fail(l, *m->rejected_);
    reject(*m->rejected_);
  }
  for (const auto& [n, c] : children_) {
    if (n == name) fail(l, absl::StrCat(type_name_, ": module '", name, "' is registered twice"));
    if (c == m) {
      fail(l, absl::StrCat(type_name_, ": this ", m->type_name(), " is already registered as '", n,
                           "'; a module is registered once (nn::clone makes a copy with "
                           "params of its own)"));
    }
  }
  for (const auto& [n, p] : params_) {
    if (n == name) {
      fail(l, absl::StrCat(type_name_, ": module '", name, "' clashes with a parameter name"));
    }
  }
  m->attribute_to(l);
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

void Module::apply_params(const ParamFilter& filter,
                          const std::function<void(const std::string&, ParamSetter&)>& fn) {
  for (auto& [path, p] : named_parameters()) {
    if (!filter.matches(path, p.kind())) continue;
    ParamSetter setter(p.s_, OptionSource::kApply);
    fn(path, setter);
  }
}

int Module::register_forward_pre_hook(ForwardPreHook hook) {
  pre_hooks_.emplace_back(next_hook_, std::move(hook));
  return next_hook_++;
}

int Module::register_forward_hook(ForwardHook hook) {
  hooks_.emplace_back(next_hook_, std::move(hook));
  return next_hook_++;
}

bool Module::remove_hook(int handle) {
  auto drop = [&](auto& v) {
    auto it = std::find_if(v.begin(), v.end(), [&](const auto& e) { return e.first == handle; });
    if (it == v.end()) return false;
    v.erase(it);
    return true;
  };
  return drop(pre_hooks_) || drop(hooks_);
}

std::shared_ptr<Module> clone_module(const Module& m, const ir::SourceLoc& loc) {
  if (!m.factory_) {
    fail(loc,
         absl::StrCat("clone: ", m.describe(),
                      " was not made with nn::make, which keeps its constructor's arguments "
                      "for clone: make it with nn::make<",
                      ir::printable(m.type_name()), "-class>(...) instead of std::make_shared"));
  }
  std::shared_ptr<Module> c = m.factory_();
  c->factory_ = m.factory_;
  c->checkpoint_at_ = m.checkpoint_at_;
  auto from = m.named_parameters(), to = c->named_parameters();
  auto names = [](const auto& ps) {
    std::vector<std::string> out;
    for (const auto& [n, p] : ps) out.push_back(n);
    return absl::StrJoin(out, ", ");
  };
  bool same = from.size() == to.size();
  for (size_t i = 0; same && i < from.size(); ++i) {
    same = from[i].first == to[i].first && from[i].second.dims() == to[i].second.dims();
  }
  if (!same) {
    fail(loc,
         absl::StrCat(
             "clone: ", m.describe(), " has the params [", names(from),
             "] but its constructor makes [", names(to),
             "]: register its modules and params in the constructor (and apply a weight norm to "
             "the copy) to clone it"));
  }
  for (size_t i = 0; i < from.size(); ++i) {
    const ParamState& src = state(from[i].second);
    ParamState& dst = state(to[i].second);
    dst.param.options = src.param.options;
    dst.param.dtype = src.param.dtype;
    dst.sources = src.sources;
    dst.locs = src.locs;
    dst.parametrizations = src.parametrizations;
  }
  c->pre_hooks_ = m.pre_hooks_;
  c->hooks_ = m.hooks_;
  c->next_hook_ = m.next_hook_;
  return c;
}

Parameter* Module::find_parameter(const std::string& name) {
  for (auto& [n, p] : params_) {
    if (n == name) return &p;
  }
  return nullptr;
}

std::string Module::describe() const {
  return absl::StrCat(ir::printable(type_name_), " '", path_.empty() ? "<root>" : path_, "'");
}

void Module::set_paths(const std::string& path, const ir::SourceLoc& root_loc) {
  path_ = path;
  rooted_at_ = root_loc;
  for (auto& [n, p] : params_) p.s_->param.path = path.empty() ? n : path + "." + n;
  for (auto& [n, c] : children_) c->set_paths(path.empty() ? n : path + "." + n, root_loc);
}

void Module::check_not_rooted(const ir::SourceLoc& loc, absl::string_view what) const {
  if (!rooted_at_) return;
  fail(loc, absl::StrCat(describe(), ": ", what,
                         " is registered after the model was handed to set_root (at ",
                         rooted_at_->file.empty() ? "an unknown line" : rooted_at_->str(),
                         "), so it would not be part of it; register every module and "
                         "parameter before set_root"));
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
  check_not_rejected(ir::SourceLoc::from(loc));
  if (!x.defined())
    fail(ir::SourceLoc::from(loc), absl::StrCat(describe(), ": input tensor is undefined"));
  return ModuleScope(&x.builder(), *this, ir::SourceLoc::from(loc));
}

ModuleScope::ModuleScope(Builder* b, const Module& m, const ir::SourceLoc& loc) : builder_(b) {
  if (const auto& at = m.checkpoint_at()) {
    if (m.path().empty()) {
      fail(*at, absl::StrCat("checkpoint: ", m.describe(),
                             " is the root module: checkpoint its submodules (the blocks whose "
                             "activations are recomputed in backward)"));
    }
    builder_->graph_.add_checkpoint(ir::Checkpoint{m.path(), *at});
  }
  builder_->scopes_.push_back(Builder::Scope{&m, loc});
}

void checkpoint(Module& m, std::source_location loc) {
  m.checkpoint_at_ = ir::SourceLoc::from(loc);
}

ModuleScope::~ModuleScope() { builder_->scopes_.pop_back(); }

}  // namespace retc::nn
