#include "compiler/nn/builder.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "compiler/nn/error.h"
#include "ir/diagnostic.h"
#include "ir/format.h"
#include "ir/loops.h"

namespace retc::nn {

namespace {

// An initializer's numbers: finite, a stddev and a scale not negative, a
// uniform range not reversed; `bad(what, value)` otherwise (RETURNN would take
// a NaN, and TF a negative stddev, without a word).
template <class Bad>
void check_initializer(const ir::Initializer& init, Bad&& bad) {
  using Kind = ir::Initializer::Kind;
  switch (init.kind) {
    case Kind::kConstant:
      if (!std::isfinite(init.value)) bad("the constant must be finite", init.value);
      break;
    case Kind::kVarianceScaling:
      if (!(init.scale > 0) || !std::isfinite(init.scale))
        bad("the variance scale must be finite and positive", init.scale);
      break;
    case Kind::kNormal:
      if (!std::isfinite(init.mean)) bad("the mean must be finite", init.mean);
      if (!(init.stddev >= 0) || !std::isfinite(init.stddev))
        bad("the stddev must be finite and not negative", init.stddev);
      break;
    case Kind::kUniform:
      if (!std::isfinite(init.minval) || !std::isfinite(init.maxval) ||
          !(init.minval <= init.maxval))
        bad(absl::StrCat("the range [", init.minval, ", ", init.maxval,
                         "] must be finite and not reversed; minval"),
            init.minval);
      break;
    case Kind::kSubgraph:
      break;
  }
}

}  // namespace

namespace {

// Names RETURNN uses in layer references ("data:<key>", "from": "<name>"):
// no '/', ':' or quotes.
bool is_layer_name(absl::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '.' || c == '-';
    if (!ok) return false;
  }
  return true;
}

}  // namespace

void fail(const ir::SourceLoc& loc, absl::string_view message) {
  throw ModelError(ir::user_error(loc, message));
}

void check_dim_sizes(const std::vector<ir::Dim>& dims, absl::FunctionRef<std::string()> what,
                     const ir::SourceLoc& loc) {
  for (const ir::Dim& d : dims) {
    if (d.size() && *d.size() < 1) {
      // Where model code made the dim, if it did; else where it is used.
      const ir::SourceLoc& made = d.made_at();
      fail(made.known() && !is_library_loc(made) ? made : loc,
           absl::StrCat(what(), ": the dim ", d.describe(), " has size ", *d.size(),
                        "; a static dim needs a positive size"));
    }
  }
}

Tensor Builder::extern_data(std::string key, std::vector<ir::Dim> dims, ir::DType dtype,
                            std::optional<ir::Dim> sparse_dim, std::source_location loc) {
  ir::SourceLoc l = ir::SourceLoc::from(loc);
  if (!is_layer_name(key)) {
    fail(l, absl::StrCat("extern data key '", ir::printable(key),
                         "' is invalid; expected letters, digits, '_', '.' and '-'"));
  }
  for (const ir::Node& n : graph_.nodes()) {
    if (n.kind == ir::NodeKind::kData && n.attrs.get<ir::attr::Key>() == key) {
      fail(l, absl::StrCat("extern data '", key, "' is declared twice"));
    }
  }
  if (dims.empty() || !dims[0].is_batch()) {
    fail(l, absl::StrCat("extern data '", key, "' must start with the batch dim, got ",
                         ir::describe(dims)));
  }
  for (size_t i = 0; i < dims.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (dims[i] == dims[j]) {
        fail(l, absl::StrCat("extern data '", key, "' has the dim ", dims[i].describe(), " twice"));
      }
    }
  }
  auto data_what = [&] { return absl::StrCat("extern data '", key, "'"); };
  check_dim_sizes(dims, data_what, l);
  if (sparse_dim) check_dim_sizes({*sparse_dim}, data_what, l);
  if (sparse_dim && dtype == ir::DType::kFloat32) {
    fail(l, absl::StrCat("extern data '", key, "' is sparse and needs an integer dtype"));
  }
  ir::NodeSpec spec;
  spec.attrs.set<ir::attr::Key>(key);
  spec.loc = l;
  spec.type = ir::TensorType{std::move(dims), dtype, std::move(sparse_dim)};
  auto id = graph_.add(ir::NodeKind::kData, {}, std::move(spec));
  if (!id.ok()) fail(l, id.status().message());
  return Tensor(this, *id);
}

void Builder::set_root_impl(std::shared_ptr<Module> root, std::source_location loc) {
  ir::SourceLoc l = ir::SourceLoc::from(loc);
  if (root_) fail(l, "the root module is already set");
  if (!root) fail(l, "the root module is null");
  root->check_not_rejected(l);
  root_ = std::move(root);
  root_loc_ = l;
  root_->set_paths("", l);
  root_->attribute_to(l);
  absl::flat_hash_map<const void*, std::string> seen;
  for (auto& [path, p] : root_->named_parameters()) {
    // At the user's line: where the param's module was registered.
    check_dim_sizes(
        p.dims(), [&] { return absl::StrCat("parameter '", path, "'"); }, p.ir().loc);
    if (auto it = seen.find(p.identity()); it != seen.end()) {
      fail(p.ir().loc, absl::StrCat("parameter '", path, "' is also registered as '", it->second,
                                    "'; share modules, not parameters"));
    }
    seen[p.identity()] = path;
    ParamState& st = state(p);
    st.frozen = true;
    decls_.push_back(p);
    ir::ParamId pid = graph_.add_param(st.param);
    ir::NodeSpec spec;
    spec.loc = st.param.loc;
    spec.param = pid;
    size_t dot = path.rfind('.');
    spec.module_path = dot == std::string::npos ? "" : path.substr(0, dot);
    auto id = graph_.add(ir::NodeKind::kParam, {}, spec);
    if (!id.ok()) fail(st.param.loc, id.status().message());
    // Reparametrizations, in registration order; expand_parametrizations
    // lowers them to param-init and step subgraphs.
    for (const Parametrization& r : st.parametrizations) {
      ir::NodeSpec rs;
      rs.loc = r.loc;
      rs.module_path = spec.module_path;
      ir::NodeKind kind = ir::NodeKind::kWeightNorm;
      switch (r.kind) {
        case Parametrization::Kind::kWeightNorm:
          rs.attrs.set<ir::attr::Axes>(r.axes);
          break;
        case Parametrization::Kind::kWeightDropout:
          kind = ir::NodeKind::kWeightDropout;
          rs.attrs.set<ir::attr::Rate>(r.value);
          break;
        case Parametrization::Kind::kWeightNoise:
          kind = ir::NodeKind::kWeightNoise;
          rs.attrs.set<ir::attr::Stddev>(r.value);
          break;
      }
      id = graph_.add(kind, {*id}, std::move(rs));
      if (!id.ok()) fail(r.loc, absl::StrCat("parameter '", path, "': ", id.status().message()));
    }
    param_nodes_[p.identity()] = *id;
  }
}

Tensor Builder::param(const Parameter& p, std::source_location loc) {
  auto it = param_nodes_.find(p.identity());
  if (it == param_nodes_.end()) {
    fail(scopes_.empty() ? ir::SourceLoc::from(loc) : scopes_.back().loc,
         absl::StrCat(where(), "parameter '", p.ir().path,
                      "' is not part of the root module; register its module with "
                      "register_module and call set_root before forward"));
  }
  return Tensor(this, it->second);
}

void Builder::add_assign(const Parameter& p, const Tensor& value, std::string mode,
                         const ir::SourceLoc& loc) {
  const std::string what = absl::StrCat(where(), "assigning parameter '", p.ir().path, "': ");
  if (p.is_parametrized())
    fail(loc, absl::StrCat(what,
                           "it has a reparametrization (weight norm, dropout or noise); "
                           "assign a plain param"));
  if (active_loop_ >= 0 || (value.defined() && loop_of(value) >= 0))
    fail(loc, absl::StrCat(what,
                           "not inside a loop (a step assigns once): assign from the "
                           "loop's result after loop.end()"));
  if (active_branch_)
    fail(loc, absl::StrCat(what,
                           "not inside a branch of nn::cond: pick the value with "
                           "nn::where or nn::cond and assign it after"));
  auto it = param_nodes_.find(p.identity());
  if (it == param_nodes_.end()) fail(loc, absl::StrCat(what, "it is not part of the root module"));
  add(ir::NodeKind::kParamAssign, {Tensor(this, it->second), value},
      {ir::attr::Mode{std::move(mode)}}, loc);
  assigns_.emplace_back(p, loc);
}

std::string Builder::where() const {
  if (scopes_.empty()) return "";
  return scopes_.back().module->describe() + ": ";
}

Tensor Builder::add(ir::NodeKind kind, const std::vector<Tensor>& inputs, ir::Attrs attrs,
                    const ir::SourceLoc& loc) {
  std::vector<ir::NodeId> ids;
  for (const Tensor& t : inputs) {
    if (!t.defined())
      fail(loc, absl::StrCat(where(), node_kind_name(kind), ": an input is undefined"));
    if (&t.builder() != this) {
      fail(loc, absl::StrCat(where(), node_kind_name(kind), ": an input belongs to another model"));
    }
    ids.push_back(t.id());
  }
  // Which loop the new node is in: a node reading a loop's values is in
  // that loop, which must be the active one (outside, values of a finished
  // loop are reachable through loop.stack() only).
  loop_of_.resize(graph_.size(), -1);
  auto loop = ir::node_loop(kind, attrs, ids, loop_of_);
  if (!loop.ok())
    fail(loc, absl::StrCat(where(), node_kind_name(kind), ": ", loop.status().message()));
  if (*loop >= 0 && *loop != active_loop_) {
    fail(loc,
         absl::StrCat(where(), node_kind_name(kind), ": reads a value computed in the loop over ",
                      loops_[*loop].axis.describe(),
                      " outside that loop; stack it with loop.stack(value)\n",
                      loops_[*loop].loc.str(), ": note: the loop starts here"));
  }
  // A loop's stacked values are complete only once the loop has ended: read
  // inside it, they would be the frames so far (torch) or fail in RETURNN.
  for (ir::NodeId in : ids) {
    const ir::Node& n = graph_.node(in);
    if (n.kind != ir::NodeKind::kLoopStack) continue;
    const int64_t stacked = n.attrs.get<ir::attr::Loop>();
    if (stacked == active_loop_) {
      fail(loc,
           absl::StrCat(where(), node_kind_name(kind), ": reads loop.stack(...) of the loop over ",
                        loops_[stacked].axis.describe(),
                        " inside that loop; the stacked frames are there after loop.end(); "
                        "inside, carry what the step needs in a loop state\n",
                        n.loc.str(), ": note: stacked here"));
    }
  }
  // A branch's values are read in that branch, or by its cond node.
  for (ir::NodeId in : ids) {
    const int64_t* c = graph_.node(in).attrs.find<ir::attr::Cond>();
    if (!c || graph_.node(in).kind == ir::NodeKind::kCond) continue;
    const int64_t branch = graph_.node(in).attrs.get<ir::attr::Branch>();
    const int64_t* own = attrs.find<ir::attr::Cond>();
    const bool reads_own_branch =
        active_branch_ && active_branch_->first == *c && active_branch_->second == branch;
    if (!reads_own_branch && !(kind == ir::NodeKind::kCond && own && *own == *c)) {
      fail(loc, absl::StrCat(where(), node_kind_name(kind),
                             ": reads a value computed in a branch of nn::cond outside that "
                             "branch; return it from the branch"));
    }
  }
  if (active_branch_) {
    attrs.set<ir::attr::Cond>(active_branch_->first);
    attrs.set<ir::attr::Branch>(active_branch_->second);
  }
  for (const auto& [key, value] : attrs.items()) {
    auto what = [&] { return absl::StrCat(where(), node_kind_name(kind)); };
    if (const auto* d = std::get_if<ir::Dim>(&value)) {
      if (d->size() && *d->size() < 1) check_dim_sizes({*d}, what, loc);
    }
    if (const auto* ds = std::get_if<std::vector<ir::Dim>>(&value)) check_dim_sizes(*ds, what, loc);
  }
  ir::NodeSpec spec;
  spec.attrs = std::move(attrs);
  spec.loc = loc;
  spec.module_path = scopes_.empty() ? "" : scopes_.back().module->path();
  auto id = graph_.add(kind, std::move(ids), std::move(spec));
  if (!id.ok()) fail(loc, absl::StrCat(where(), id.status().message()));
  loop_of_.resize(graph_.size(), -1);
  loop_of_[id->index] = *loop;
  return Tensor(this, *id);
}

Tensor Builder::add_operator(ir::NodeKind kind, const Tensor& a, const Tensor& b) {
  if (!scopes_.empty()) return add(kind, {a, b}, {}, scopes_.back().loc);
  ir::SourceLoc loc;
  if (b.defined() && &b.builder() == this) loc = graph_.node(std::max(a.id(), b.id())).loc;
  return add(kind, {a, b}, {}, loc);
}

void Builder::mark(const Tensor& t, ir::Mark::Kind kind, std::string name,
                   const ir::SourceLoc& loc) {
  if (!is_layer_name(name)) {
    fail(loc, absl::StrCat("output or loss name '", ir::printable(name),
                           "' is invalid; expected letters, digits, '_', '.' and '-'"));
  }
  if (int32_t l = loop_of(t); l >= 0) {
    fail(loc, absl::StrCat("output or loss '", name, "': a value inside the loop over ",
                           loops_[l].axis.describe(),
                           " has one value per frame; mark "
                           "loop.stack(value) instead"));
  }
  for (const ir::Mark& m : graph_.marks()) {
    if (m.kind == kind && m.name == name) {
      fail(loc, absl::StrCat(ir::mark_kind_name(kind), " name '", name, "' is already used\n",
                             m.loc.str(), ": note: first used here"));
    }
  }
  if (kind == ir::Mark::Kind::kLoss && !ir::kind_facts(graph_.node(t.id()).kind).is_loss) {
    fail(loc, absl::StrCat("loss '", name,
                           "': only a softmax_cross_entropy, ctc_loss, regression loss or "
                           "custom_loss result can be a loss"));
  }
  if (kind == ir::Mark::Kind::kSearch && !t.type().sparse_dim) {
    fail(loc, absl::StrCat("search output '", name, "': ", t.type().describe(),
                           " is not sparse; a search output holds labels (nn::argmax, "
                           "nn::ctc_greedy_decode or a loop's stacked nn::choice)"));
  }
  graph_.add_mark(ir::Mark{kind, t.id(), std::move(name), loc});
}

int32_t Builder::loop_of(const Tensor& t) const {
  return static_cast<size_t>(t.id().index) < loop_of_.size() ? loop_of_[t.id().index] : -1;
}

int32_t Builder::begin_cond(const ir::SourceLoc& loc) {
  if (active_branch_) fail(loc, "nn::cond inside a branch of nn::cond: conds do not nest yet");
  if (active_loop_ >= 0) {
    fail(loc, absl::StrCat("nn::cond inside the loop over ", loops_[active_loop_].axis.describe(),
                           ": not yet (select with nn::where)"));
  }
  return conds_++;
}

int32_t Builder::begin_loop(const ir::Dim& axis, const ir::SourceLoc& loc) {
  if (active_branch_) fail(loc, "a loop inside a branch of nn::cond: not yet");
  if (active_loop_ >= 0) {
    fail(loc, absl::StrCat("a loop inside the loop over ", loops_[active_loop_].axis.describe(),
                           ": loops do not nest yet\n", loops_[active_loop_].loc.str(),
                           ": note: the outer loop starts here"));
  }
  if (axis.is_batch() || axis.is_feature_like())
    fail(loc, absl::StrCat("loop: the axis ", axis.describe(), " must be a spatial dim"));
  loops_.push_back(LoopInfo{axis, loc});
  active_loop_ = static_cast<int32_t>(loops_.size() - 1);
  return active_loop_;
}

void Builder::add_loop_state(int32_t loop, const Tensor& state) {
  loops_.at(loop).states.emplace_back(state.id(), false);
}

void Builder::set_loop_next(int32_t loop, const Tensor& state, const ir::SourceLoc& loc) {
  for (auto& [id, has_next] : loops_.at(loop).states) {
    if (id != state.id()) continue;
    if (has_next) fail(loc, "loop.next: this state already has a next value");
    has_next = true;
    return;
  }
  fail(loc, "loop.next: the first argument is not a state of this loop (use loop.state(initial))");
}

void Builder::end_loop(int32_t loop, const ir::SourceLoc& loc) {
  LoopInfo& info = loops_.at(loop);
  if (info.ended) fail(loc, "loop.end: the loop has ended already");
  for (const auto& [id, has_next] : info.states) {
    if (!has_next) {
      fail(graph_.node(id).loc,
           "loop state without a next value: call loop.next(state, value) before loop.end()");
    }
  }
  info.ended = true;
  active_loop_ = -1;
}

Tensor Builder::size_source(const ir::Dim& d) {
  loop_of_.resize(graph_.size(), -1);
  for (size_t i = 0; i < graph_.size(); ++i) {
    if (loop_of_[i] < 0 && ir::index_of(graph_.nodes()[i].type.dims, d) >= 0)
      return Tensor(this, graph_.id_of(i));
  }
  return Tensor();
}

void Builder::finish() {
  if (active_loop_ >= 0) {
    fail(loops_[active_loop_].loc,
         absl::StrCat("the loop over ", loops_[active_loop_].axis.describe(),
                      " never ends: call loop.end()"));
  }
  for (size_t i = 0; i < decls_.size(); ++i) {
    // Only options change after set_root; dims and paths are fixed there.
    const ParamState& st = state(decls_[i]);
    const ir::Param& p = st.param;
    const ir::ParamOptions& o = p.options;
    // At the line that set the option (else where the param was made).
    auto bad = [&](const ir::SourceLoc& set_at, absl::string_view what, double v) {
      fail(set_at.known() ? set_at : p.loc,
           absl::StrCat("parameter '", p.path, "': ", what, ", got ", v));
    };
    if (!(o.weight_decay.value >= 0) || !std::isfinite(o.weight_decay.value)) {
      bad(st.locs.weight_decay, "weight decay must not be negative (nor NaN or inf)",
          o.weight_decay.value);
    }
    check_initializer(o.initial, [&](absl::string_view what, double v) {
      bad(st.locs.initial, absl::StrCat("initial value: ", what), v);
    });
    if (!(o.lr_multiplier >= 0)) {
      bad(st.locs.lr_multiplier, "the learning-rate multiplier must not be negative",
          o.lr_multiplier);
    }
    if (!(o.gradient_clip >= 0))
      bad(st.locs.gradient_clip, "gradient clipping must not be negative", o.gradient_clip);
    if (o.initial.kind == ir::Initializer::Kind::kSubgraph &&
        (o.initial.node < 0 || static_cast<size_t>(o.initial.node) >= graph_.size())) {
      fail(p.loc,
           absl::StrCat("parameter '", p.path, "': its initial value is not part of this model"));
    }
    graph_.mutable_param(ir::ParamId{static_cast<int32_t>(i)}).options = o;
  }
  // An assigned param is not trained: the optimizer would write it too.
  for (const auto& [p, loc] : assigns_) {
    if (p.ir().options.trainable)
      fail(loc, absl::StrCat("assigning parameter '", p.ir().path,
                             "': it is trainable, and the optimizer would update it too; "
                             "set_trainable(false) on it (e.g. an average of weights)"));
  }
  if (graph_.marks().empty()) {
    // Nothing to compute: say so at set_root's line (else the first node's).
    ir::SourceLoc l = root_loc_.known() || graph_.size() == 0 ? root_loc_ : graph_.nodes()[0].loc;
    fail(l,
         "the model marks no output and no loss: mark a result with "
         "mark_as_output(name) or mark_as_loss(name)");
  }
}

}  // namespace retc::nn
