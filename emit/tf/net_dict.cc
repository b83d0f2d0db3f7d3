#include "emit/tf/net_dict.h"

#include <algorithm>
#include <array>
#include <map>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "emit/tf/naming.h"
#include "emit/tf/target.h"
#include "ir/dim_table.h"
#include "ir/loops.h"
#include "ir/status_macros.h"
#include "nlohmann/json.hpp"

namespace retc::emit::tf {
namespace {

PyValue dim_ref(const ir::DimTable& t, const ir::Dim& d) { return PyValue::ref(t.id(d)); }

PyValue dims_value(const ir::DimTable& t, const std::vector<ir::Dim>& dims) {
  std::vector<PyValue> v;
  for (size_t i = 0; i < dims.size(); ++i) {
    // A dim that occurs again later (a square weight [h, h]): its first
    // occurrence gets a higher match priority, so RETURNN's dim matching (in
    // `dot`'s reduce, ...) picks it first, as the IR does.
    bool repeated =
        ir::index_of(std::vector<ir::Dim>(dims.begin() + i + 1, dims.end()), dims[i]) >= 0;
    if (repeated) {
      v.push_back(PyValue::call(t.id(dims[i]) + ".copy", {}, {{"match_priority", 1}}));
    } else {
      v.push_back(dim_ref(t, dims[i]));
    }
  }
  return PyValue::list(std::move(v));
}

PyValue dim_definition(const ir::DimTable& t, const ir::Dim& d) {
  switch (d.kind()) {
    case ir::Dim::Kind::kBatch:
      return PyValue::ref("batch_dim");
    case ir::Dim::Kind::kFeature:
      return PyValue::call("FeatureDim", {d.name(), *d.size()});
    case ir::Dim::Kind::kSpatial:
      if (d.size()) return PyValue::call("SpatialDim", {d.name(), *d.size()});
      return PyValue::call("SpatialDim", {d.name()});
    case ir::Dim::Kind::kDerived:
      return derived_dim_value(t, d);
  }
  return PyValue();
}

PyValue ints_value(const std::vector<int64_t>& v) {
  std::vector<PyValue> items(v.begin(), v.end());
  return PyValue::list(std::move(items));
}

// `reuse_params` that take each named variable of a RETURNN layer from a
// retc variable layer: {"map": {name: {"layer_output": layer}}}.
PyValue reuse_params(std::initializer_list<std::pair<const char*, PyValue>> vars) {
  PyValue map = PyValue::dict();
  for (const auto& [name, layer] : vars) map.set(name, PyValue::dict({{"layer_output", layer}}));
  return PyValue::dict({{"map", std::move(map)}});
}

// What the whole graph tells the lowering of each node.
struct GraphFacts {
  const ir::Graph& g;
  const ir::DimTable& t;
  const ir::LoopAnalysis& loops;
  std::vector<std::string> loop_names;
  std::vector<bool> is_loss, is_output, is_target;
  std::vector<int> uses;
  // Weight noise and dropout folded into their param's variable layer: the
  // node whose layer stands for each node (itself, or the param's).
  std::vector<ir::NodeId> layer_of;
  std::vector<double> param_noise, param_dropout;  // by param node
  // Param nodes an assignment writes or whose value reads: read once (a
  // variable_read layer), so that the assignment follows every read of its
  // param and its value sees the params as the step's forward read them
  // (one read op, before the optimizer's update).
  std::vector<bool> pinned;
  // Slices that together cut one value's axis into parts (a GLU's halves):
  // one RETURNN split layer (tf.split; backward one concat) where each slice
  // was a StridedSlice whose gradient wrote a zero-filled value of the
  // source's size, summed after (collect_split_groups).
  struct Split {
    std::string layer;
    std::vector<ir::Dim> parts;
    size_t first;  // the slice (lowest index) that adds the layer
  };
  std::vector<Split> splits;
  std::vector<int> split_of, split_part;  // by node: its split and part, or -1
  // A Linear: a dot of a value and a 2-d weight, plus a bias over the
  // weight's other dim, becomes one layer (collect_linears): by the add node,
  // the dot it takes in (else -1) and the scale of the dot's value before the
  // bias (weight norm's fold: g / ‖v‖; else -1); the dot and the product make
  // no layer. Where the Linear alone reads the scale (and the scale alone the
  // norm), linear_norm_here: the layer takes g and computes the norm and the
  // scale itself, neither makes a layer.
  std::vector<int> linear_dot, linear_scale;
  std::vector<bool> in_linear, linear_norm_here;
};

// Lowering one node: its layer, built from the node and its inputs' layers.
class Lowering {
 public:
  Lowering(const GraphFacts& f, size_t i)
      : f_(f),
        i_(i),
        n_(f.g.nodes()[i]),
        in_loop_(n_.kind == ir::NodeKind::kLoopStack ? -1 : f.loops.loop_of[i]) {}

  const ir::Node& node() const { return n_; }
  size_t index() const { return i_; }
  int32_t in_loop() const { return in_loop_; }
  const GraphFacts& facts() const { return f_; }
  /// A node attribute (ir/attrs.h): `l.attr<ir::attr::Axis>()`.
  template <ir::attr::Tag A>
  decltype(auto) attr() const {
    return n_.attrs.get<A>();
  }
  PyValue dim(const ir::Dim& d) const { return dim_ref(f_.t, d); }
  PyValue dims(const std::vector<ir::Dim>& d) const { return dims_value(f_.t, d); }
  template <ir::attr::Tag A>
  PyValue dim_attr() const {
    return dim(attr<A>());
  }
  template <ir::attr::Tag A>
  PyValue dims_attr() const {
    return dims(attr<A>());
  }
  // One dim as itself, several as a list (RETURNN's `axis` / `reduce`).
  PyValue dim_or_dims(const std::vector<ir::Dim>& d) const {
    return d.size() == 1 ? dim(d[0]) : dims(d);
  }

  // The layer reference to input k, as seen from this node's place: inside
  // a loop `prev:` for a state, `base:` for a value outside; outside, a
  // loop's value as `<loop>/<layer>`.
  PyValue ref(size_t k) const {
    const ir::NodeId in = f_.layer_of[n_.inputs[k].index];
    const ir::Node& src = f_.g.node(in);
    // In a branch of a cond (its subnetwork), a value outside it is `base:`.
    if (const int64_t* branch = n_.attrs.find<ir::attr::Branch>()) {
      const int64_t* src_branch = src.attrs.find<ir::attr::Branch>();
      if (!src_branch || *src_branch != *branch || src.kind == ir::NodeKind::kCond ||
          src.attrs.get<ir::attr::Cond>() != n_.attrs.get<ir::attr::Cond>())
        return PyValue("base:" + outside_ref(src, in));
    }
    return PyValue(outside_ref(src, in));
  }
  // Whether input k is a value from outside this node's loop (a `base:` ref).
  bool from_outside_loop(size_t k) const {
    const ir::NodeId in = f_.layer_of[n_.inputs[k].index];
    return in_loop_ >= 0 && f_.loops.loop_of[in.index] != in_loop_;
  }
  // `src`'s layer name as seen from this node's loop (see ref).
  std::string outside_ref(const ir::Node& src, ir::NodeId in) const {
    const int32_t src_loop = f_.loops.loop_of[in.index];
    if (in_loop_ >= 0 && src_loop == in_loop_) {
      if (src.kind == ir::NodeKind::kLoopState)
        return "prev:" + f_.g.node(f_.loops.next_of_state[in.index]).name;
      return src.name;
    }
    if (in_loop_ >= 0) return "base:" + src.name;
    if (src_loop >= 0) return f_.loop_names[src_loop] + "/" + src.name;
    return src.name;
  }
  // `from`: one input as itself, several as a list.
  PyValue from() const {
    if (n_.inputs.size() == 1) return ref(0);
    std::vector<PyValue> v;
    for (size_t k = 0; k < n_.inputs.size(); ++k) v.push_back(ref(k));
    return PyValue::list(std::move(v));
  }
  // A layer dict: {"class": cls, "from": from()}.
  PyValue layer(absl::string_view cls) const {
    return PyValue::dict({{"class", std::string(cls)}, {"from", from()}});
  }
  PyValue layer_from(absl::string_view cls, size_t k) const {
    return PyValue::dict({{"class", std::string(cls)}, {"from", ref(k)}});
  }
  const ir::Node& input(size_t k) const { return f_.g.node(n_.inputs[k]); }

 private:
  const GraphFacts& f_;
  size_t i_;
  const ir::Node& n_;
  int32_t in_loop_;
};

// Strides and spatial dims of a windowed op (conv, pool).
void set_windowed(PyValue& layer, const Lowering& l) {
  const auto& strides = l.attr<ir::attr::Strides>();
  // RETURNN's default strides: 1 for conv, but the window (pool_size) for
  // pool, so a pool of stride 1 says so.
  const auto* pool_size = l.node().attrs.find<ir::attr::Size>();
  if (std::any_of(strides.begin(), strides.end(), [](int64_t s) { return s != 1; }) ||
      (pool_size && strides != *pool_size))
    layer.set("strides", ints_value(strides));
  const auto& axes = l.attr<ir::attr::Axes>();
  // Frames past a sequence's end hold arbitrary values: masked (conv: 0,
  // max: -inf), they never leak into the frames before the end. (Avg pool
  // over a dynamic axis is "valid" only, windows within the sequence;
  // RETURNN could not mask it: an int mask value for float data.)
  const std::string* mode = l.node().attrs.find<ir::attr::Mode>();
  if ((!mode || *mode == "max") &&
      std::any_of(axes.begin(), axes.end(), [](const ir::Dim& d) { return d.is_dynamic(); }))
    layer.set("use_time_mask", true);
  layer.set("in_spatial_dims", l.dims(axes));
  layer.set("out_spatial_dims", l.dims_attr<ir::attr::OutAxes>());
}

// loss_opts (`opts` plus use_normalized_loss) and loss_scale of a loss node.
void set_loss_options(PyValue& layer, const ir::Node& n, PyValue opts) {
  if (const bool* z = n.attrs.find<ir::attr::Normalize>(); z && *z)
    opts.set("use_normalized_loss", true);
  if (!opts.items().empty()) layer.set("loss_opts", std::move(opts));
  if (const double* s = n.attrs.find<ir::attr::Scale>()) layer.set("loss_scale", *s);
}

// RETURNN's loss on a softmax activation layer over the logits (input 0),
// against the extern data of input 1: it uses the logits for a stable loss
// and reports the loss's error (frame or label error rate).
// A loss's target: extern data by its key, a computed one as "layer:NAME".
std::string loss_target(const Lowering& l, size_t k) {
  if (const std::string* key = l.input(k).attrs.find<ir::attr::Key>();
      key && l.input(k).kind == ir::NodeKind::kData)
    return *key;
  const ir::NodeId in = l.facts().layer_of[l.node().inputs[k].index];
  return "layer:" + l.outside_ref(l.facts().g.node(in), in);
}

PyValue softmax_loss(const Lowering& l, absl::string_view loss) {
  PyValue layer = l.layer_from("activation", 0);
  layer.set("activation", "softmax");
  layer.set("loss", std::string(loss));
  layer.set("target", loss_target(l, 1));
  return layer;
}

// --- one function per kind (or group of kinds) --------------------------------

// Whether no input has all of the node's dims: RETURNN then broadcasts only
// when told (allow_broadcast_all_sources), as for [B, T, C] + [B, F].
bool outer_broadcast(const Lowering& l) {
  for (size_t k = 0; k < l.node().inputs.size(); ++k) {
    if (l.input(k).type.dims.size() == l.node().type.dims.size()) return false;
  }
  return true;
}

PyValue lower_binary(const Lowering& l, ir::BinaryOp op) {
  PyValue layer = l.layer("combine");
  layer.set("kind", std::string(combine_kind(op)));
  if (outer_broadcast(l)) layer.set("allow_broadcast_all_sources", true);
  return layer;
}

PyValue variable_layer(const Lowering& l) {
  const ir::Node& n = l.node();
  const ir::Param& p = l.facts().g.param(n.param);
  const ir::ParamOptions& o = p.options;
  const size_t i = l.index();
  PyValue layer = PyValue::dict();
  layer.set("class", "variable");
  layer.set("shape", l.dims(p.dims));
  if (p.dtype != ir::DType::kFloat32) layer.set("dtype", std::string(dtype_name(p.dtype)));
  if (o.init_node >= 0) {
    layer.set("init_by_layer", l.facts().g.node(ir::NodeId{o.init_node}).name);
  } else {
    layer.set("init", o.initial.value);
  }
  if (!o.trainable) layer.set("trainable", false);
  layer.set("name_scope", "/" + scope_of(p));
  layer.set("param_name", "param");
  if (o.weight_decay.value != 0.0) layer.set("L2", o.weight_decay.value);
  PyValue updater = PyValue::dict();
  if (o.lr_multiplier != 1.0) {
    updater.set("optimizer", PyValue::dict({{"learning_rate_multiplier", o.lr_multiplier}}));
  }
  if (o.gradient_clip != 0.0) updater.set("gradient_clip", o.gradient_clip);
  if (!updater.items().empty()) layer.set("updater_opts", std::move(updater));
  if (!o.device.empty()) layer.set("param_device", o.device);
  if (double s = l.facts().param_noise[i]; s != 0.0) layer.set("param_variational_noise", s);
  if (double r = l.facts().param_dropout[i]; r != 0.0) layer.set("param_dropout", r);
  // RETURNN constructs only layers that outputs and losses need; a param
  // nothing reads must still become a variable (checkpoint).
  if (l.facts().uses[i] == 0) layer.set("is_output_layer", true);
  return layer;
}

absl::StatusOr<PyValue> lower_param(const Lowering& l, PyValue& network) {
  PyValue layer = variable_layer(l);
  const size_t i = l.index();
  if (!l.facts().pinned[i]) return layer;
  const ir::Param& p = l.facts().g.param(l.node().param);
  if (l.facts().param_noise[i] != 0.0 || l.facts().param_dropout[i] != 0.0)
    return absl::InternalError(absl::StrCat("emit_net_dict: param '", p.path,
                                            "' is assigned or read by an assignment and has "
                                            "weight noise or dropout; tf-legalize rejects it"));
  const std::string var = l.node().name + "_variable";
  network.append(var, std::move(layer));
  return PyValue::dict({{"class", "variable_read"}, {"var", var}});
}

PyValue lower_norm(const Lowering& l) {
  // Over static dims (a weight's), the config's _retc_norm
  // (kNormDefinitions): RETURNN's math_norm takes abs and pow of x and,
  // backward, their gradients over all of x; with weight norm on, they took
  // a third of a conformer's step at 2 x 200. Over a dynamic dim, math_norm
  // (its sum leaves out the frames past each sequence's end).
  const auto& axes = l.attr<ir::attr::Axes>();
  if (std::any_of(axes.begin(), axes.end(), [](const ir::Dim& d) { return d.is_dynamic(); })) {
    PyValue layer = l.layer("math_norm");
    layer.set("p", 2);
    layer.set("axis", l.dim_or_dims(axes));
    return layer;
  }
  PyValue layer = l.layer_from("eval", 0);
  layer.set("eval", "norm(self, source, axis=axis)");
  layer.set("out_type", PyValue::ref("_retc_norm_type"));
  layer.set("eval_locals",
            PyValue::dict({{"norm", PyValue::ref("_retc_norm")}, {"axis", l.dim_or_dims(axes)}}));
  return layer;
}

// The layers that give the sizes of a node's dynamic dims (its inputs).
void set_shape_deps(const Lowering& l, PyValue& layer) {
  if (l.node().inputs.empty()) return;
  std::vector<PyValue> deps;
  for (size_t k = 0; k < l.node().inputs.size(); ++k) deps.push_back(l.ref(k));
  layer.set("shape_deps", PyValue::list(std::move(deps)));
}

PyValue lower_random(const Lowering& l) {
  // Seeded (initial values): stateless with a fixed seed, the same values
  // whenever evaluated. Fresh: RETURNN's state variable (seeded from the
  // network's random_seed) advances at every evaluation, and in a rec loop
  // at every frame.
  PyValue layer = PyValue::dict({{"class", "random"}});
  layer.set("shape", l.dims_attr<ir::attr::Shape>());
  layer.set("distribution", l.attr<ir::attr::Distribution>());
  const ir::Attrs& a = l.node().attrs;
  if (const double* v = a.find<ir::attr::Mean>()) layer.set("mean", *v);
  if (const double* v = a.find<ir::attr::Stddev>()) layer.set("stddev", *v);
  if (const double* v = a.find<ir::attr::Minval>()) layer.set("minval", *v);
  if (const double* v = a.find<ir::attr::Maxval>()) layer.set("maxval", *v);
  if (l.node().kind == ir::NodeKind::kRandom) {
    layer.set("seed", l.attr<ir::attr::Seed>());
    layer.set("static", true);
  }
  set_shape_deps(l, layer);
  return layer;
}

PyValue lower_constant(const Lowering& l) {
  PyValue layer = PyValue::dict({{"class", "constant"},
                                 {"value", l.attr<ir::attr::Value>()},
                                 {"shape", l.dims_attr<ir::attr::Shape>()}});
  set_shape_deps(l, layer);
  return layer;
}

PyValue lower_dot(const Lowering& l) {
  PyValue layer = l.layer("dot");
  layer.set("reduce", l.dim_or_dims(l.attr<ir::attr::Reduce>()));
  return layer;
}

PyValue lower_activation(const Lowering& l) {
  PyValue layer = l.layer("activation");
  layer.set("activation", l.attr<ir::attr::Func>());
  return layer;
}

PyValue lower_dropout(const Lowering& l) {
  // RETURNN's default mask is shared over batch and time; the IR names the
  // axes along which it varies.
  PyValue layer = l.layer("dropout");
  layer.set("dropout", l.attr<ir::attr::Rate>());
  layer.set("dropout_axis", l.dims_attr<ir::attr::Axes>());
  return layer;
}

PyValue lower_reduce(const Lowering& l) {
  PyValue layer = l.layer("reduce");
  layer.set("mode", l.attr<ir::attr::Mode>());
  layer.set("axes", l.dims_attr<ir::attr::Axes>());
  return layer;
}

PyValue lower_normalize(const Lowering& l) {
  // The config's _retc_normalize (kNormalizeDefinitions): RETURNN's norm
  // layer's math (its params left out: retc's modules own them) with the
  // gradient in closed form; autodiff of the norm layer's mean and variance
  // made 11 ops over all of x backward (5 now): a conformer's 60 layer norms
  // took about a tenth of its step's op time at 2 x 200 (Neg, BroadcastTo, Mul).
  PyValue layer = l.layer_from("eval", 0);
  layer.set("eval", "normalize(self, source, axis=axis, epsilon=epsilon)");
  layer.set("eval_locals", PyValue::dict({{"normalize", PyValue::ref("_retc_normalize")},
                                          {"axis", l.dims_attr<ir::attr::Axes>()},
                                          {"epsilon", l.attr<ir::attr::Epsilon>()}}));
  return layer;
}

PyValue lower_gather(const Lowering& l) {
  PyValue layer = l.layer_from("gather", 0);
  layer.set("position", l.ref(1));
  layer.set("axis", l.dim_attr<ir::attr::Axis>());
  return layer;
}

PyValue lower_concat(const Lowering& l) {
  return PyValue::dict(
      {{"class", "concat"},
       {"from", PyValue::list({PyValue::tuple({l.ref(0), l.dim_attr<ir::attr::AxisA>()}),
                               PyValue::tuple({l.ref(1), l.dim_attr<ir::attr::AxisB>()})})},
       {"out_dim", l.dim_attr<ir::attr::OutDim>()}});
}

PyValue lower_softmax(const Lowering& l) {
  PyValue layer = l.layer("softmax_over_spatial");
  layer.set("axis", l.dim_attr<ir::attr::Axis>());
  if (l.attr<ir::attr::Log>()) layer.set("log_space", true);
  return layer;
}

// RETURNN's fused self-attention; its QKV matrix is retc's param. Relative
// positions: RETURNN's encoding layer on retc's table, added to the keys
// (key_shift), as a layer of its own before the attention.
PyValue lower_self_attention(const Lowering& l, PyValue& network) {
  const ir::Node& n = l.node();
  PyValue layer = l.layer_from("self_attention", 0);
  layer.set("num_heads", l.attr<ir::attr::NumHeads>());
  layer.set("total_key_dim", *l.attr<ir::attr::KeyDim>().size());
  layer.set("out_dim", l.dim_attr<ir::attr::OutDim>());
  if (l.attr<ir::attr::Causal>()) layer.set("attention_left_only", true);
  if (const double* r = n.attrs.find<ir::attr::AttDropout>()) layer.set("attention_dropout", *r);
  layer.set("reuse_params", reuse_params({{"QKV", l.ref(1)}}));
  if (n.inputs.size() == 3) {
    const std::string rel = rel_pos_layer_name(n);
    network.append(rel, PyValue::dict({
                            {"class", "relative_positional_encoding"},
                            {"from", l.ref(0)},
                            {"out_dim", l.dim(l.input(2).type.dims[1])},
                            {"clipping", l.attr<ir::attr::Clipping>()},
                            {"reuse_params", reuse_params({{"encoding_matrix", l.ref(2)}})},
                        }));
    layer.set("key_shift", rel);
  }
  return layer;
}

// RETURNN's masked computation outside a loop packs the masked frames per
// sequence into its out_spatial_dim; the computation: a copy.
PyValue lower_masked_select(const Lowering& l) {
  PyValue layer = l.layer_from("masked_computation", 0);
  layer.set("mask", l.ref(1));
  layer.set("in_spatial_dim", l.dim_attr<ir::attr::Axis>());
  layer.set("out_spatial_dim", l.dim_attr<ir::attr::OutDim>());
  layer.set("unit", PyValue::dict({{"class", "copy"}, {"from", "data"}}));
  return layer;
}

PyValue lower_conv(const Lowering& l) {
  // RETURNN's conv with retc's filter and bias as layers.
  const ir::Node& w = l.input(1);
  const auto& axes = l.attr<ir::attr::Axes>();
  std::vector<PyValue> kernel;
  for (size_t k = 0; k < axes.size(); ++k) kernel.push_back(l.dim(w.type.dims[k]));
  PyValue layer = l.layer_from("conv", 0);
  layer.set("filter_size", PyValue::list(std::move(kernel)));
  layer.set("padding", l.attr<ir::attr::Padding>());
  set_windowed(layer, l);
  if (l.attr<ir::attr::Dilation>() != 1) layer.set("dilation_rate", l.attr<ir::attr::Dilation>());
  const int64_t groups = l.attr<ir::attr::Groups>();
  if (groups != 1) layer.set("groups", groups);
  const ir::Dim& w_in = w.type.dims[axes.size()];
  layer.set("in_dim", l.dim(groups == 1 ? w_in : w_in.operands()[0]));
  layer.set("out_dim", l.dim(w.type.dims.back()));
  layer.set("filter", l.ref(1));
  layer.set("bias", l.ref(2));
  layer.set("with_bias", true);
  return layer;
}

PyValue lower_transposed_conv(const Lowering& l) {
  // RETURNN's transposed_conv with retc's filter [kernel..., out, in] (its
  // own layout) and bias as layers; frames past the ends masked first.
  const ir::Node& w = l.input(1);
  const auto& axes = l.attr<ir::attr::Axes>();
  std::vector<int64_t> kernel;
  for (size_t k = 0; k < axes.size(); ++k) kernel.push_back(*w.type.dims[k].size());
  PyValue layer = l.layer_from("transposed_conv", 0);
  layer.set("filter_size", ints_value(kernel));
  layer.set("strides", ints_value(l.attr<ir::attr::Strides>()));
  layer.set("padding", l.attr<ir::attr::Padding>());
  if (std::any_of(axes.begin(), axes.end(), [](const ir::Dim& d) { return d.is_dynamic(); }))
    layer.set("use_time_mask", true);
  layer.set("in_spatial_dims", l.dims(axes));
  layer.set("out_spatial_dims", l.dims_attr<ir::attr::OutAxes>());
  layer.set("in_dim", l.dim(w.type.dims[axes.size() + 1]));
  layer.set("out_dim", l.dim(w.type.dims[axes.size()]));
  layer.set("filter", l.ref(1));
  if (l.node().inputs.size() == 3) {
    layer.set("bias", l.ref(2));
  } else {
    layer.set("with_bias", false);
  }
  return layer;
}

PyValue lower_top_k(const Lowering& l, PyValue& network) {
  PyValue layer = l.layer_from("top_k", 0);
  layer.set("axis", l.dim_attr<ir::attr::Axis>());
  layer.set("k", *l.attr<ir::attr::KDim>().size());
  layer.set("k_dim", l.dim_attr<ir::attr::KDim>());
  if (!l.attr<ir::attr::Indices>()) return layer;
  // The indices: the top_k layer's sub-layer.
  const std::string top_k = l.node().name + "_top_k";
  network.append(top_k, std::move(layer));
  return PyValue::dict({{"class", "copy"}, {"from", top_k + "/indices"}});
}

// A JSON value of a raw layer as Python; "$k" strings: the k-th layer dim.
PyValue raw_value(const Lowering& l, const nlohmann::json& j) {
  const auto& dims = l.attr<ir::attr::LayerDims>();
  if (j.is_string()) {
    const std::string& s = j.get_ref<const std::string&>();
    if (s.size() > 1 && s[0] == '$' && std::all_of(s.begin() + 1, s.end(), ::isdigit)) {
      const size_t k = std::stoul(s.substr(1));
      if (k < dims.size()) return l.dim(dims[k]);
    }
    return PyValue(s);
  }
  if (j.is_boolean()) return PyValue(j.get<bool>());
  if (j.is_number_integer()) return PyValue(j.get<int64_t>());
  if (j.is_number()) return PyValue(j.get<double>());
  if (j.is_array()) {
    std::vector<PyValue> items;
    for (const auto& e : j) items.push_back(raw_value(l, e));
    return PyValue::list(std::move(items));
  }
  if (j.is_object()) {
    PyValue d = PyValue::dict();
    for (const auto& [k, v] : j.items()) d.set(k, raw_value(l, v));
    return d;
  }
  return PyValue::none();
}

PyValue lower_raw_layer(const Lowering& l) {
  // The user's layer on the inputs, with out_shape: RETURNN checks its dims.
  PyValue layer = raw_value(l, nlohmann::json::parse(l.attr<ir::attr::Layer>()));
  layer.set("from", l.from());
  std::vector<PyValue> shape;
  for (const ir::Dim& d : l.attr<ir::attr::OutDims>()) shape.push_back(l.dim(d));
  layer.set("out_shape", PyValue::set_of(std::move(shape)));
  return layer;
}

PyValue lower_window(const Lowering& l) {
  // "same": centered, as rf.window; the window's left and right written out.
  PyValue layer = l.layer_from("window", 0);
  const int64_t w = *l.attr<ir::attr::WindowDim>().size();
  layer.set("window_dim", l.dim_attr<ir::attr::WindowDim>());
  layer.set("axis", l.dim_attr<ir::attr::Axis>());
  layer.set("padding", l.attr<ir::attr::Padding>());
  if (l.attr<ir::attr::Padding>() == "same") {
    layer.set("window_left", (w - 1) / 2);
    layer.set("window_right", w - 1 - (w - 1) / 2);
  }
  if (l.attr<ir::attr::Stride>() != 1) layer.set("stride", l.attr<ir::attr::Stride>());
  if (l.attr<ir::attr::OutAxis>() != l.attr<ir::attr::Axis>())
    layer.set("out_spatial_dim", l.dim_attr<ir::attr::OutAxis>());
  return layer;
}

PyValue lower_pad(const Lowering& l) {
  PyValue layer = l.layer_from("pad", 0);
  layer.set("axes", l.dim_attr<ir::attr::Axis>());
  layer.set("padding",
            PyValue::list({PyValue::tuple({l.attr<ir::attr::Left>(), l.attr<ir::attr::Right>()})}));
  layer.set("out_dims", l.dim_attr<ir::attr::OutDim>());
  const double value = l.attr<ir::attr::Value>();
  if (l.node().type.sparse_dim) {
    layer.set("value", static_cast<int64_t>(value));  // tf.pad takes the labels' dtype
  } else {
    layer.set("value", value);
  }
  if (l.attr<ir::attr::Axis>().is_dynamic()) layer.set("handle_dynamic_dims", true);
  return layer;
}

PyValue lower_replace_dim(const Lowering& l) {
  // A static dim of the same size, or a new dynamic one with the axis's
  // lengths (RETURNN copies them to the undefined tag): a new tag.
  if (!l.attr<ir::attr::Axis>().is_dynamic() || l.node().inputs.size() == 1) {
    PyValue layer = l.layer_from("reinterpret_data", 0);
    layer.set("set_dim_tags",
              PyValue::map({{l.dim_attr<ir::attr::Axis>(), l.dim_attr<ir::attr::OutDim>()}}));
    return layer;
  }
  // A dynamic one: x's frames 0.. up to the new dim's extent (zero-padded
  // past x's), with the new dim's lengths, as rf.replace_dim_v2 on torch.
  PyValue layer = l.layer_from("slice_nd", 0);
  layer.set("start", 0);
  layer.set("size", l.dim_attr<ir::attr::OutDim>());
  layer.set("axis", l.dim_attr<ir::attr::Axis>());
  return layer;
}

PyValue lower_pool(const Lowering& l, PyValue& network) {
  PyValue layer = l.layer_from("pool", 0);
  layer.set("mode", l.attr<ir::attr::Mode>());
  layer.set("pool_size", ints_value(l.attr<ir::attr::Size>()));
  layer.set("padding", l.attr<ir::attr::Padding>());
  set_windowed(layer, l);
  // Masked max pooling leaves the lowest float in the frames past a
  // sequence's end, which the next op can overflow to -inf (dropout's
  // 1 / (1 - rate)) and an LSTM then spreads as NaN: they become 0.
  std::vector<ir::Dim> dynamic;
  for (const ir::Dim& d : l.attr<ir::attr::OutAxes>()) {
    if (d.is_dynamic()) dynamic.push_back(d);
  }
  if (l.attr<ir::attr::Mode>() != "max" || dynamic.empty()) return layer;
  std::string from = l.node().name + "_unmasked";
  network.append(from, std::move(layer));
  for (size_t k = 0; k + 1 < dynamic.size(); ++k) {
    const std::string masked = absl::StrCat(l.node().name, "_masked", k);
    network.append(masked, PyValue::dict({{"class", "seq_len_mask"},
                                          {"from", from},
                                          {"axis", l.dim(dynamic[k])},
                                          {"mask_value", 0.0}}));
    from = masked;
  }
  return PyValue::dict({{"class", "seq_len_mask"},
                        {"from", from},
                        {"axis", l.dim(dynamic.back())},
                        {"mask_value", 0.0}});
}

PyValue lower_slice(const Lowering& l, PyValue& network) {
  if (const int s = l.facts().split_of[l.index()]; s >= 0) {
    // A part of a split (collect_split_groups): a copy of the split layer's
    // sub-layer; the group's first slice adds the split layer.
    const GraphFacts::Split& split = l.facts().splits[s];
    if (split.first == l.index()) {
      PyValue layer = l.layer_from("split", 0);
      layer.set("axis", l.dim_attr<ir::attr::Axis>());
      std::vector<PyValue> parts;  // each its own tag (dims() marks a repeated dim)
      for (const ir::Dim& d : split.parts) parts.push_back(l.dim(d));
      layer.set("out_dims", PyValue::list(std::move(parts)));
      network.append(split.layer, std::move(layer));
    }
    return PyValue::dict(
        {{"class", "copy"},
         {"from", absl::StrCat(split.layer, "/", l.facts().split_part[l.index()])}});
  }
  const int64_t start = l.attr<ir::attr::Start>();
  PyValue layer = l.layer_from("slice", 0);
  layer.set("axis", l.dim_attr<ir::attr::Axis>());
  layer.set("slice_start", start);
  layer.set("slice_end", start + *l.attr<ir::attr::OutDim>().size());
  layer.set("out_dim", l.dim_attr<ir::attr::OutDim>());
  return layer;
}

PyValue lower_split_dims(const Lowering& l) {
  PyValue layer = l.layer_from("split_dims", 0);
  layer.set("axis", l.dim_attr<ir::attr::Axis>());
  layer.set("dims", l.dims_attr<ir::attr::DimsAttr>());
  return layer;
}

PyValue lower_merge_dims(const Lowering& l) {
  PyValue layer = l.layer_from("merge_dims", 0);
  layer.set("axes", l.dims_attr<ir::attr::Axes>());
  layer.set("out_dim", l.dim_attr<ir::attr::OutDim>());
  layer.set("keep_order", true);
  return layer;
}

PyValue lower_batch_norm(const Lowering& l) {
  // RETURNN's batch_norm on retc's variables: running mean and variance are
  // non-trainable params that the layer updates in training. Masked: the
  // statistics over all frames but padding; unmasked: TF's fused batch norm
  // over the padded tensor (its running variance from the unbiased batch
  // variance, as torch's batch_norm keeps it).
  PyValue layer = l.layer_from("batch_norm", 0);
  layer.set("in_dim", l.dim_attr<ir::attr::Axis>());
  layer.set("masked_time", !l.node().attrs.get<ir::attr::Unmasked>());
  layer.set("epsilon", l.attr<ir::attr::Epsilon>());
  layer.set("momentum", l.attr<ir::attr::Momentum>());
  layer.set("reuse_params", reuse_params({{"batch_norm/v2_mean", l.ref(1)},
                                          {"batch_norm/v2_variance", l.ref(2)},
                                          {"batch_norm/v2_gamma", l.ref(3)},
                                          {"batch_norm/v2_beta", l.ref(4)}}));
  return layer;
}

PyValue lower_shift_axis(const Lowering& l) {
  PyValue layer = l.layer_from("shift_axis", 0);
  layer.set("axis", l.dim_attr<ir::attr::Axis>());
  layer.set("amount", l.attr<ir::attr::Amount>());
  layer.set("pad", true);
  if (const double* v = l.node().attrs.find<ir::attr::PadValue>()) {
    if (l.node().type.sparse_dim) {
      layer.set("pad_value", static_cast<int64_t>(*v));
    } else {
      layer.set("pad_value", *v);
    }
  }
  layer.set("adjust_size_info", false);
  return layer;
}

PyValue lower_pos_encoding(const Lowering& l) {
  PyValue layer = l.layer_from("positional_encoding", 0);
  // In a loop, the layer encodes the rec step (RETURNN's default there).
  if (!l.node().attrs.find<ir::attr::Loop>()) layer.set("axis", l.dim_attr<ir::attr::Axis>());
  layer.set("add_to_input", true);
  return layer;
}

PyValue lower_seq_mask(const Lowering& l) {
  PyValue layer = l.layer_from("seq_len_mask", 0);
  layer.set("axis", l.dim_attr<ir::attr::Axis>());
  layer.set("mask_value", l.attr<ir::attr::Value>());
  return layer;
}

PyValue lower_scale_grad(const Lowering& l) {
  PyValue layer = l.layer("scaled_grad");
  layer.set("scale", l.attr<ir::attr::Scale>());
  return layer;
}

PyValue lower_lstm(const Lowering& l) {
  PyValue layer = l.layer_from("rec", 0);
  layer.set("unit", "nativelstm2");
  layer.set("out_dim", l.dim_attr<ir::attr::OutDim>());
  layer.set("axis", l.dim_attr<ir::attr::Axis>());
  if (l.attr<ir::attr::Direction>() == -1) layer.set("direction", -1);
  layer.set("reuse_params", reuse_params({{"W", l.ref(1)}, {"W_re", l.ref(2)}, {"b", l.ref(3)}}));
  if (l.node().inputs.size() == 6)
    layer.set("initial_state", PyValue::dict({{"h", l.ref(4)}, {"c", l.ref(5)}}));
  return layer;
}

PyValue lower_cross_entropy(const Lowering& l) {
  // Not marked as a loss: the value per frame (tf-legalize: plain CE only).
  if (!l.facts().is_loss[l.index()]) {
    return PyValue::dict({{"class", "sparse_softmax_cross_entropy_with_logits"},
                          {"logits", l.ref(0)},
                          {"targets", l.ref(1)}});
  }
  PyValue layer = softmax_loss(l, "ce");
  PyValue opts = PyValue::dict();
  if (const double* e = l.node().attrs.find<ir::attr::LabelSmoothing>())
    opts.set("label_smoothing", *e);
  if (const double* f = l.node().attrs.find<ir::attr::FocalLossFactor>())
    opts.set("focal_loss_factor", *f);
  set_loss_options(layer, l.node(), std::move(opts));
  return layer;
}

// CTC as a value per sequence: RETURNN's ctc_loss layer (blank last), 0
// where the labels cannot align (inf), as the marked loss adds.
PyValue lower_ctc_value(const Lowering& l, PyValue& network) {
  const std::string name = l.node().name;
  network.append(name + "_ctc", PyValue::dict({{"class", "ctc_loss"},
                                               {"logits", l.ref(0)},
                                               {"targets", l.ref(1)},
                                               {"from", PyValue::list({})}}));
  network.append(
      name + "_finite",
      PyValue::dict(
          {{"class", "compare"}, {"from", name + "_ctc"}, {"kind", "less"}, {"value", 1e30}}));
  return PyValue::dict({{"class", "switch"},
                        {"condition", name + "_finite"},
                        {"true_from", name + "_ctc"},
                        {"false_from", 0.0}});
}

PyValue lower_ctc_loss(const Lowering& l) {
  // RETURNN's "ctc" loss (blank last). A sequence whose labels cannot align
  // with its frames adds 0 (and no gradient) instead of stopping training
  // with an infinite loss.
  PyValue layer = softmax_loss(l, "ctc");
  set_loss_options(
      layer, l.node(),
      PyValue::dict({{"ctc_opts", PyValue::dict({{"ignore_longer_outputs_than_inputs", true}})}}));
  return layer;
}

PyValue lower_regression_loss(const Lowering& l) {
  PyValue layer = l.layer_from("copy", 0);
  layer.set("loss", l.attr<ir::attr::Mode>());
  layer.set("target", loss_target(l, 1));
  set_loss_options(layer, l.node(), PyValue::dict());
  return layer;
}

PyValue lower_custom_loss(const Lowering& l) {
  // RETURNN's "as_is" loss: the value summed over frames (and over any other
  // dims), like a loss layer's per-frame value.
  PyValue layer = l.layer_from("copy", 0);
  layer.set("loss", "as_is");
  PyValue opts = PyValue::dict();
  if (const bool* e = l.node().attrs.find<ir::attr::AsError>(); e && *e) opts.set("as_error", true);
  set_loss_options(layer, l.node(), std::move(opts));
  return layer;
}

PyValue lower_loop_unstack(const Lowering& l, PyValue& network) {
  const ir::Node& in = l.input(0);
  const ir::Dim& axis = l.attr<ir::attr::Axis>();
  // Teacher forcing, x shifted by one frame along the loop's axis: RETURNN's
  // own idiom, `prev:` of x's frame with the pad value before the first,
  // instead of a shift_axis layer outside (which RETURNN's loss flattening
  // mishandles when a layer moved out of the loop reads its frames).
  if (in.kind == ir::NodeKind::kShiftAxis && in.attrs.get<ir::attr::Axis>() == axis &&
      in.attrs.get<ir::attr::Amount>() == 1) {
    const ir::NodeId src = l.facts().layer_of[in.inputs[0].index];
    const std::string frame = l.node().name + "_frame";
    const double* pad = in.attrs.find<ir::attr::PadValue>();
    PyValue initial = in.type.sparse_dim ? PyValue(static_cast<int64_t>(pad ? *pad : 0.0))
                                         : PyValue(pad ? *pad : 0.0);
    network.append(frame, PyValue::dict({{"class", "rec_unstack"},
                                         {"from", l.outside_ref(l.facts().g.node(src), src)},
                                         {"axis", l.dim(axis)},
                                         {"initial_output", std::move(initial)}}));
    return PyValue::dict({{"class", "copy"}, {"from", "prev:" + frame}});
  }
  PyValue layer = l.layer_from("rec_unstack", 0);
  layer.set("axis", l.dim_attr<ir::attr::Axis>());
  return layer;
}

PyValue lower_loop_next(const Lowering& l) {
  PyValue layer = l.layer_from("copy", 1);
  if (l.from_outside_loop(1)) {
    // A next value from outside the loop: RETURNN would move the copy out of
    // the loop, and its `prev:` (the state) would then need a time axis it
    // does not have (an AssertionError). Reading its own previous value (and
    // ignoring it) keeps the layer in the loop.
    layer = PyValue::dict({{"class", "eval"},
                           {"from", PyValue::list({PyValue("prev:" + l.node().name), l.ref(1)})},
                           {"eval", "(source(0), source(1))[1]"}});
  }
  layer.set("initial_output", "base:" + l.facts().g.node(l.input(0).inputs[0]).name);
  return layer;
}

PyValue lower_range(const Lowering& l) {
  const ir::Dim& dim = l.attr<ir::attr::DimAttr>();
  if (dim.is_dynamic()) {
    PyValue layer = l.layer_from("range_in_axis", 0);
    layer.set("axis", l.dim(dim));
    return layer;
  }
  return PyValue::dict({{"class", "range"},
                        {"limit", *dim.size()},
                        {"out_spatial_dim", l.dim(dim)},
                        {"dtype", "int32"},
                        {"sparse", true}});
}

PyValue lower_compare(const Lowering& l) {
  PyValue layer = l.layer("compare");
  layer.set("kind", l.attr<ir::attr::Op>());
  layer.set("allow_broadcast_all_sources", true);
  return layer;
}

// Where RETURNN's cast leaves another sparse dim than the IR's type has
// (indices into attr sparse_dim, or dense ints from indices): the cast, then
// the sparse dim set.
PyValue lower_cast(const Lowering& l, PyValue& network) {
  PyValue layer = l.layer_from("cast", 0);
  layer.set("dtype", l.attr<ir::attr::DType>());
  const std::optional<ir::Dim>& out = l.node().type.sparse_dim;
  if (returnn_cast_sparse_dim(l.facts().g.node(l.node().inputs[0]).type, l.node().type) == out)
    return layer;
  const std::string cast = l.node().name + "_cast";
  network.append(cast, std::move(layer));
  PyValue set = PyValue::dict(
      {{"class", "reinterpret_data"}, {"from", cast}, {"set_sparse", out.has_value()}});
  if (out) set.set("set_sparse_dim", l.dim(*out));
  return set;
}

PyValue lower_where(const Lowering& l) {
  return PyValue::dict({{"class", "switch"},
                        {"condition", l.ref(0)},
                        {"true_from", l.ref(1)},
                        {"false_from", l.ref(2)}});
}

// The layer of one node; nullopt for nodes that have none (data goes to
// extern_data, a state is read as prev:<next value>, weight noise and
// dropout are options of their param's variable layer).
// One lowering per kind; a kind without one is a use of this deleted
// template, an error at the dispatch below.
template <ir::NodeKind K>
absl::StatusOr<std::optional<PyValue>> lower(const Lowering& l, PyValue& network) = delete;
#define RETC_LOWER(K)                                                              \
  template <>                                                                      \
  absl::StatusOr<std::optional<PyValue>> lower<ir::NodeKind::K>(const Lowering& l, \
                                                                [[maybe_unused]] PyValue& network)

RETC_LOWER(kData) { return std::nullopt; }
RETC_LOWER(kLoopState) { return lower<ir::NodeKind::kData>(l, network); }

RETC_LOWER(kWeightDropout) {
  const ir::Node& n = l.node();
  if (l.facts().layer_of[l.index()] == l.facts().g.id_of(l.index())) {
    return unlowerable(target(), n,
                       "expand-parametrizations and tf-legalize leave weight noise and "
                       "dropout only on a param's own value");
  }
  return std::nullopt;
}
RETC_LOWER(kWeightNoise) { return lower<ir::NodeKind::kWeightDropout>(l, network); }

RETC_LOWER(kWeightNorm) {
  const ir::Node& n = l.node();
  return unlowerable(target(), n, "expand-parametrizations rewrites weight norm");
}

RETC_LOWER(kParam) { return lower_param(l, network); }

RETC_LOWER(kNorm) { return lower_norm(l); }

RETC_LOWER(kRandom) { return lower_random(l); }
RETC_LOWER(kFreshRandom) { return lower<ir::NodeKind::kRandom>(l, network); }

RETC_LOWER(kConstant) { return lower_constant(l); }

RETC_LOWER(kDot) { return lower_dot(l); }

RETC_LOWER(kActivation) { return lower_activation(l); }

RETC_LOWER(kDropout) { return lower_dropout(l); }

RETC_LOWER(kReduce) { return lower_reduce(l); }

RETC_LOWER(kNormalize) { return lower_normalize(l); }

RETC_LOWER(kGather) { return lower_gather(l); }

RETC_LOWER(kConcat) { return lower_concat(l); }

RETC_LOWER(kSoftmax) { return lower_softmax(l); }

RETC_LOWER(kSelfAttention) { return lower_self_attention(l, network); }

RETC_LOWER(kConv) { return lower_conv(l); }

RETC_LOWER(kPool) { return lower_pool(l, network); }

RETC_LOWER(kTransposedConv) { return lower_transposed_conv(l); }

RETC_LOWER(kReplaceDim) { return lower_replace_dim(l); }

RETC_LOWER(kLogicalNot) {
  PyValue layer = l.layer_from("compare", 0);
  layer.set("kind", "equal");
  layer.set("value", false);
  return layer;
}

RETC_LOWER(kCumsum) {
  PyValue layer = l.layer_from("cumsum", 0);
  layer.set("axis", l.dim_attr<ir::attr::Axis>());
  return layer;
}

RETC_LOWER(kLogCumsumExp) {
  // RETURNN has no layer for it: TF's own op on the axis of the layer's output.
  PyValue layer = l.layer_from("eval", 0);
  layer.set("eval",
            "tf.math.cumulative_logsumexp(source(0), "
            "axis=self.output.get_axis_from_description(axis))");
  layer.set("eval_locals", PyValue::dict({{"axis", l.dim_attr<ir::attr::Axis>()}}));
  return layer;
}

RETC_LOWER(kRangeOfLengths) {
  PyValue layer = l.layer_from("range_from_length", 0);
  layer.set("out_spatial_dim", l.dim_attr<ir::attr::OutDim>());
  return layer;
}

RETC_LOWER(kScatter) {
  // RETURNN's scatter_nd layer only adds: TF's unsorted segment ops in the
  // config's _retc_scatter (kScatterDefinitions), its output dims from the
  // sources (also when RETURNN moves the layer out of a loop).
  PyValue layer =
      PyValue::dict({{"class", "eval"},
                     {"from", PyValue::list({l.ref(0), l.ref(1)})},
                     {"eval", "scatter(self, source, axis=axis, mode=mode, fill=fill)"},
                     {"out_type", PyValue::ref("_retc_scatter_type")},
                     {"eval_locals", PyValue::dict({{"scatter", PyValue::ref("_retc_scatter")},
                                                    {"axis", l.dim_attr<ir::attr::Axis>()},
                                                    {"mode", l.attr<ir::attr::Mode>()},
                                                    {"fill", l.attr<ir::attr::Value>()}})}});
  return layer;
}

RETC_LOWER(kParamAssign) {
  // The config's _retc_assign (kAssignDefinitions): the variable's assign op
  // after the param's one read (pinned), run with each training step.
  return PyValue::dict({{"class", "eval"},
                        {"from", PyValue::list({l.ref(1), l.ref(0)})},
                        {"eval", "assign(self, source, op=op)"},
                        {"out_type", PyValue::ref("_retc_assign_type")},
                        {"eval_locals", PyValue::dict({{"assign", PyValue::ref("_retc_assign")},
                                                       {"op", l.attr<ir::attr::Mode>()}})},
                        {"is_output_layer", true}});
}

RETC_LOWER(kEditDistance) {
  return PyValue::dict({{"class", "edit_distance"},
                        {"a", l.ref(0)},
                        {"b", l.ref(1)},
                        {"a_spatial_dim", l.dim_attr<ir::attr::AxisA>()},
                        {"b_spatial_dim", l.dim_attr<ir::attr::AxisB>()}});
}

RETC_LOWER(kTopK) { return lower_top_k(l, network); }

RETC_LOWER(kStack) {
  PyValue layer = l.layer("stack");
  layer.set("out_spatial_dim", l.dim_attr<ir::attr::OutDim>());
  return layer;
}

RETC_LOWER(kWindow) { return lower_window(l); }

RETC_LOWER(kRawLayer) { return lower_raw_layer(l); }

RETC_LOWER(kPad) { return lower_pad(l); }

RETC_LOWER(kSlice) { return lower_slice(l, network); }

RETC_LOWER(kMaskedSelect) { return lower_masked_select(l); }

RETC_LOWER(kRepeat) {
  PyValue layer = l.layer_from("repeat", 0);
  layer.set("repetitions", l.ref(1));
  layer.set("axis", l.dim_attr<ir::attr::Axis>());
  layer.set("out_dim", l.dim_attr<ir::attr::OutDim>());
  return layer;
}

RETC_LOWER(kLength) {
  PyValue layer = l.layer_from("length", 0);
  layer.set("axis", l.dim_attr<ir::attr::Axis>());
  return layer;
}

RETC_LOWER(kLstmFinal) {
  PyValue layer = l.layer_from("get_last_hidden_state", 0);
  layer.set("key", l.attr<ir::attr::State>());
  layer.set("out_dim", l.dim(l.input(0).attrs.get<ir::attr::OutDim>()));
  return layer;
}

// emit_net_dict: a cond layer of the branches' subnetworks
RETC_LOWER(kCond) { return std::nullopt; }

// the rec layer's "end" and max_seq_len_via
RETC_LOWER(kLoopEnd) { return std::nullopt; }

RETC_LOWER(kChoice) {
  // Beam search over the log-probs' label dim (the config's beam_size);
  // the hypotheses' scores are their summed log-probs, ranked divided by
  // their lengths with the config's length_normalization.
  PyValue layer = l.layer_from("choice", 0);
  layer.set("target", PyValue::none());  // search only
  layer.set("beam_size", PyValue::ref("beam_size"));
  layer.set("input_type", "log_prob");
  layer.set("length_normalization", PyValue::ref("length_normalization"));
  return layer;
}

RETC_LOWER(kCumConcat) {
  PyValue layer = l.layer_from("cum_concat", 0);
  layer.set("out_spatial_dim", l.dim_attr<ir::attr::OutDim>());
  return layer;
}

RETC_LOWER(kSplitDims) { return lower_split_dims(l); }

RETC_LOWER(kMergeDims) { return lower_merge_dims(l); }

RETC_LOWER(kBatchNorm) { return lower_batch_norm(l); }

RETC_LOWER(kShiftAxis) { return lower_shift_axis(l); }

RETC_LOWER(kPosEncoding) { return lower_pos_encoding(l); }

RETC_LOWER(kSeqMask) { return lower_seq_mask(l); }

RETC_LOWER(kScaleGrad) { return lower_scale_grad(l); }

RETC_LOWER(kLstm) { return lower_lstm(l); }

RETC_LOWER(kCrossEntropy) { return lower_cross_entropy(l); }

RETC_LOWER(kCtcLoss) {
  return l.facts().is_loss[l.index()] ? lower_ctc_loss(l) : lower_ctc_value(l, network);
}

RETC_LOWER(kRegressionLoss) { return lower_regression_loss(l); }

RETC_LOWER(kCustomLoss) { return lower_custom_loss(l); }

RETC_LOWER(kLoopUnstack) { return lower_loop_unstack(l, network); }

RETC_LOWER(kLoopNext) { return lower_loop_next(l); }

RETC_LOWER(kLoopStack) {
  // After a loop with a choice: the best hypothesis.
  const int64_t id = l.attr<ir::attr::Loop>();
  const bool search = l.facts().loops.loops[id].choice.valid();
  return l.layer_from(search ? "decide" : "copy", 0);
}

RETC_LOWER(kTrainFlag) { return PyValue::dict({{"class", "train_flag"}}); }

RETC_LOWER(kTrainStep) { return PyValue::dict({{"class", "global_train_step"}}); }

RETC_LOWER(kRange) { return lower_range(l); }

RETC_LOWER(kCompare) { return lower_compare(l); }

RETC_LOWER(kCast) { return lower_cast(l, network); }

RETC_LOWER(kWhere) { return lower_where(l); }

#undef RETC_LOWER

// A Linear (collect_linears): the add's layer, from the dot's value and
// weight, the bias and the scale (weight norm's fold) if any.
PyValue lower_linear(const Lowering& l) {
  const GraphFacts& f = l.facts();
  const size_t d = static_cast<size_t>(f.linear_dot[l.index()]);
  const Lowering dot(f, d);
  const size_t bias = f.in_linear[f.g.nodes()[l.index()].inputs[0].index] ? 1 : 0;
  std::vector<PyValue> from = {dot.ref(0), dot.ref(1), l.ref(bias)};
  const int s = f.linear_scale[l.index()];
  if (f.linear_norm_here[l.index()]) {
    from.push_back(Lowering(f, static_cast<size_t>(s)).ref(0));  // g
  } else if (s >= 0) {
    const Lowering product(f, f.g.nodes()[l.index()].inputs[1 - bias].index);
    from.push_back(product.ref(product.node().inputs[0].index == static_cast<int32_t>(s) ? 0 : 1));
  }
  PyValue layer = PyValue::dict({{"class", "eval"}, {"from", PyValue::list(std::move(from))}});
  layer.set("eval", f.linear_norm_here[l.index()]
                        ? "linear(self, source, reduce=reduce, norm_here=True)"
                        : "linear(self, source, reduce=reduce)");
  layer.set("out_type", PyValue::ref("_retc_linear_type"));
  layer.set("eval_locals", PyValue::dict({{"linear", PyValue::ref("_retc_linear")},
                                          {"reduce", dot.dim(dot.attr<ir::attr::Reduce>()[0])}}));
  return layer;
}

absl::StatusOr<std::optional<PyValue>> lower(const Lowering& l, PyValue& network) {
  if (l.facts().linear_dot[l.index()] >= 0) return lower_linear(l);
  if (l.facts().in_linear[l.index()]) return std::nullopt;  // in its add's layer
  switch (l.node().kind) {
#define RETC_X(E, S, F, ...) \
  case ir::NodeKind::k##E:   \
    return lower_binary(l, *ir::binary_op(l.node().kind));
    RETC_FOR_EACH_BINARY_KIND(RETC_X)
#undef RETC_X
#define RETC_X(E, S, F, ...) \
  case ir::NodeKind::k##E:   \
    return lower<ir::NodeKind::k##E>(l, network);
    RETC_FOR_EACH_NONBINARY_KIND(RETC_X)
#undef RETC_X
  }
  return unlowerable(target(), l.node(), "unknown kind");
}

PyValue extern_data_entry(const GraphFacts& f, size_t i) {
  const ir::Node& n = f.g.nodes()[i];
  PyValue d = PyValue::dict({{"dim_tags", dims_value(f.t, n.type.dims)}});
  if (n.type.dtype != ir::DType::kFloat32) d.set("dtype", std::string(dtype_name(n.type.dtype)));
  if (n.type.sparse_dim) d.set("sparse_dim", dim_ref(f.t, *n.type.sparse_dim));
  // RETURNN treats keys besides "data" as targets, missing in evaluation
  // inside loops; data that no loss reads as its target is an input.
  if (n.attrs.get<ir::attr::Key>() != "data" && !f.is_target[i])
    d.set("available_for_inference", true);
  return d;
}

// Weight noise on a param, and weight dropout on a param or on its noised
// value, become options of the param's variable layer.
void fold_weight_options(GraphFacts& f) {
  for (size_t i = 0; i < f.g.size(); ++i) {
    const ir::Node& n = f.g.nodes()[i];
    if (n.kind != ir::NodeKind::kWeightNoise && n.kind != ir::NodeKind::kWeightDropout) continue;
    const ir::NodeId in = n.inputs[0];
    const ir::Node& src = f.g.node(in);
    const bool noise = n.kind == ir::NodeKind::kWeightNoise;
    const bool on_param = src.kind == ir::NodeKind::kParam;
    const bool on_noised = !noise && src.kind == ir::NodeKind::kWeightNoise &&
                           f.layer_of[in.index] != in;  // a folded noise
    if (!on_param && !on_noised) continue;
    const ir::NodeId param = f.layer_of[in.index];
    f.layer_of[i] = param;
    (noise ? f.param_noise : f.param_dropout)[param.index] =
        noise ? n.attrs.get<ir::attr::Stddev>() : n.attrs.get<ir::attr::Rate>();
  }
}

// Whether a loop state has a dynamic dim besides the batch.
bool over_other_dynamic_dim(const ir::Node& state) {
  for (const ir::Dim& d : state.type.dims) {
    if (d.is_dynamic() && !d.is_batch()) return true;
  }
  return false;
}

}  // namespace

// Whether node `a` is computed from node `b` (inputs precede users).
bool depends_on(const ir::Graph& g, ir::NodeId a, ir::NodeId b) {
  std::vector<bool> reaches(g.size(), false);
  reaches[b.index] = true;
  for (int32_t i = b.index + 1; i <= a.index; ++i) {
    for (ir::NodeId in : g.node(ir::NodeId{i}).inputs) reaches[i] = reaches[i] || reaches[in.index];
  }
  return reaches[a.index];
}

namespace {

// Whether node i is a layer of the top-level network (in no loop's unit and
// no cond's branch): where the lowerings that merge layers apply.
bool outside_loops_and_conds(const GraphFacts& f, size_t i) {
  return f.loops.loop_of[i] < 0 && !f.g.nodes()[i].attrs.find<ir::attr::Branch>();
}

// splits: slices of one source over one axis, outside loops and conds,
// whose [start, end) cut the whole axis into two or more parts with none
// left over or sliced twice. The split layer is named after the first slice
// ("<slice>_split", unless a node has that name).
void collect_split_groups(GraphFacts& f) {
  const ir::Graph& g = f.g;
  f.split_of.assign(g.size(), -1);
  f.split_part.assign(g.size(), -1);
  std::map<std::pair<int32_t, std::string>, std::vector<size_t>> groups;  // (source, axis)
  for (size_t i = 0; i < g.size(); ++i) {
    const ir::Node& n = g.nodes()[i];
    if (n.kind != ir::NodeKind::kSlice || !outside_loops_and_conds(f, i) ||
        f.loops.loop_of[n.inputs[0].index] >= 0 || !n.attrs.get<ir::attr::Axis>().size())
      continue;
    groups[{n.inputs[0].index, f.t.id(n.attrs.get<ir::attr::Axis>())}].push_back(i);
  }
  absl::flat_hash_set<std::string> names;  // the layers', made at the first split
  auto start = [&](size_t i) { return g.nodes()[i].attrs.get<ir::attr::Start>(); };
  for (auto& [key, slices] : groups) {
    if (slices.size() < 2) continue;
    std::vector<size_t> by_start = slices;
    std::stable_sort(by_start.begin(), by_start.end(),
                     [&](size_t a, size_t b) { return start(a) < start(b); });
    GraphFacts::Split split{g.nodes()[slices[0]].name + "_split", {}, slices[0]};
    int64_t end = 0;
    bool cut = true;
    for (size_t i : by_start) {
      const ir::Dim& d = g.nodes()[i].attrs.get<ir::attr::OutDim>();
      cut = cut && start(i) == end && d.size();
      end = start(i) + d.size().value_or(0);
      split.parts.push_back(d);
    }
    if (!cut || end != *g.nodes()[slices[0]].attrs.get<ir::attr::Axis>().size()) continue;
    if (names.empty())
      for (const ir::Node& n : g.nodes()) names.insert(n.name);
    if (names.contains(split.layer)) continue;
    for (size_t k = 0; k < by_start.size(); ++k) {
      f.split_of[by_start[k]] = static_cast<int>(f.splits.size());
      f.split_part[by_start[k]] = static_cast<int>(k);
    }
    f.splits.push_back(std::move(split));
  }
}

// Whether `scale` is weight norm's g / ‖v‖ for the dot's weight v, read by
// the Linear alone: a param g of the scale's dims over the norm of v over the
// dot's reduced dim (expand_parametrizations), read by the scale alone; no
// output, outside loops and conds.
bool is_weight_norm_scale(const GraphFacts& f, size_t scale, const ir::Node& dot) {
  const ir::Node& div = f.g.nodes()[scale];
  auto inner = [&](size_t i) {
    return f.uses[i] == 1 && !f.is_output[i] && !f.is_loss[i] && outside_loops_and_conds(f, i);
  };
  if (div.kind != ir::NodeKind::kDiv || div.inputs.size() != 2 || !inner(scale) ||
      !inner(div.inputs[1].index))
    return false;
  const ir::Node& gain = f.g.node(div.inputs[0]);
  const ir::Node& norm = f.g.node(div.inputs[1]);
  return gain.kind == ir::NodeKind::kParam && norm.kind == ir::NodeKind::kNorm &&
         norm.inputs.size() == 1 && norm.inputs[0] == dot.inputs[1] &&
         norm.attrs.get<ir::attr::Axes>() == dot.attrs.get<ir::attr::Reduce>() &&
         gain.type.dims == div.type.dims && gain.type.dtype == div.type.dtype;
}

// Linears (GraphFacts::linear_dot): RETURNN's dot and combine layers make a
// matmul between reshapes and an add of the broadcast bias (backward its
// sum, reshapes and broadcast-gradient ops); the config's _retc_linear
// (kLinearDefinitions) makes the matmul and tf.nn.bias_add on its 2-d result,
// which TF's oneDNN remapper runs as one fused kernel (backward BiasAddGrad).
// A 12-block Conformer's TF step: 7% fewer ops. Weight norm's fold (its
// product of the dot's value and g / ‖v‖, expand_parametrizations) goes in
// too; where nothing else reads the scale g / ‖v‖, as g, and the layer
// computes ‖v‖ and its gradient with the product's (_retc_scaled_linear).
// Outside loops and conds, and only where the dot (and the product) has no
// other user and its value is no output.
void collect_linears(GraphFacts& f) {
  const ir::Graph& g = f.g;
  f.linear_dot.assign(g.size(), -1);
  f.linear_scale.assign(g.size(), -1);
  f.in_linear.assign(g.size(), false);
  f.linear_norm_here.assign(g.size(), false);
  auto inner = [&](size_t i, ir::NodeKind kind) {  // a value only the fused layer reads
    const ir::Node& n = g.nodes()[i];
    return n.kind == kind && n.inputs.size() == 2 && n.inputs[0] != n.inputs[1] && f.uses[i] == 1 &&
           !f.is_output[i] && !f.is_loss[i] && outside_loops_and_conds(f, i);
  };
  for (size_t i = 0; i < g.size(); ++i) {
    const ir::Node& add = g.nodes()[i];
    if (add.kind != ir::NodeKind::kAdd || add.inputs.size() != 2 || !outside_loops_and_conds(f, i))
      continue;
    for (size_t k = 0; k < 2; ++k) {
      size_t d = add.inputs[k].index;
      int scale = -1;
      if (inner(d, ir::NodeKind::kMul)) {  // (x · v) * s
        const ir::Node& mul = g.nodes()[d];
        const size_t j = inner(mul.inputs[0].index, ir::NodeKind::kDot) ? 0 : 1;
        d = mul.inputs[j].index;
        scale = mul.inputs[1 - j].index;
      }
      if (!inner(d, ir::NodeKind::kDot)) continue;
      const ir::Node& dot = g.nodes()[d];
      const ir::Node& bias = g.node(add.inputs[1 - k]);
      const auto& reduce = dot.attrs.get<ir::attr::Reduce>();
      const std::vector<ir::Dim>& x = g.node(dot.inputs[0]).type.dims;
      const std::vector<ir::Dim>& w = g.node(dot.inputs[1]).type.dims;
      const std::vector<ir::Dim>& b = bias.type.dims;
      if (reduce.size() != 1 || w.size() != 2 || b.size() != 1 || w[0].is_dynamic() ||
          w[1].is_dynamic() || bias.type.dtype != add.type.dtype)
        continue;
      const int in = ir::index_of(w, reduce[0]);  // the first of a square weight's
      if (in < 0 || std::count(x.begin(), x.end(), reduce[0]) != 1) continue;
      const ir::Dim& out = w[1 - in];
      if (b[0] != out || (out != reduce[0] && ir::index_of(x, out) >= 0)) continue;
      if (scale >= 0 &&
          (g.nodes()[scale].type.dims != b || g.nodes()[scale].type.dtype != add.type.dtype))
        continue;
      f.linear_dot[i] = static_cast<int>(d);
      f.in_linear[d] = true;
      if (scale >= 0) {
        f.linear_scale[i] = scale;
        f.in_linear[add.inputs[k].index] = true;  // the product
        if (is_weight_norm_scale(f, static_cast<size_t>(scale), dot)) {
          f.linear_norm_here[i] = true;
          const size_t norm = g.nodes()[scale].inputs[1].index;
          f.in_linear[scale] = f.in_linear[norm] = true;
        }
      }
      break;
    }
  }
}

// The facts every lowering reads: marks, uses, targets, folded weight options.
void collect_facts(GraphFacts& f) {
  const ir::Graph& g = f.g;
  f.loop_names = loop_layer_names(g, f.loops);
  f.is_loss.assign(g.size(), false);
  f.is_output.assign(g.size(), false);
  f.is_target.assign(g.size(), false);
  f.uses.assign(g.size(), 0);
  f.param_noise.assign(g.size(), 0.0);
  f.param_dropout.assign(g.size(), 0.0);
  for (size_t i = 0; i < g.size(); ++i) f.layer_of.push_back(g.id_of(i));
  for (const ir::Mark& m : g.marks()) {
    (m.kind == ir::Mark::Kind::kLoss ? f.is_loss : f.is_output)[m.node.index] = true;
  }
  for (const ir::Node& n : g.nodes()) {
    for (ir::NodeId in : n.inputs) ++f.uses[in.index];
    if (int k = ir::kind_facts(n.kind).target_input; k >= 0) f.is_target[n.inputs[k].index] = true;
  }
  fold_weight_options(f);
  collect_split_groups(f);
  collect_linears(f);
  f.pinned.assign(g.size(), false);
  std::vector<bool> feeds_assign(g.size(), false);  // inputs precede users: one backward sweep
  for (size_t i = g.size(); i-- > 0;) {
    const ir::Node& n = g.nodes()[i];
    if (n.kind == ir::NodeKind::kParamAssign) {
      f.pinned[n.inputs[0].index] = true;
      feeds_assign[n.inputs[1].index] = true;
    }
    if (!feeds_assign[i]) continue;
    if (n.kind == ir::NodeKind::kParam) f.pinned[i] = true;
    for (ir::NodeId in : n.inputs) feeds_assign[in.index] = true;
  }
}

// Which in-loop nodes feed some next value of their loop (inputs precede
// users: one backward sweep).
std::vector<bool> feeds_next_value(const ir::Graph& g, const ir::LoopAnalysis& loops) {
  std::vector<bool> feeds_next(g.size(), false);
  for (size_t i = g.size(); i-- > 0;) {
    const ir::Node& n = g.nodes()[i];
    if (n.kind == ir::NodeKind::kLoopNext) feeds_next[i] = true;
    if (!feeds_next[i]) continue;
    for (ir::NodeId in : n.inputs) {
      if (loops.loop_of[in.index] == loops.loop_of[i]) feeds_next[in.index] = true;
    }
  }
  return feeds_next;
}

// The branches of a cond: the layers of each (then, else), in graph order.
using Branches = std::array<std::vector<std::pair<std::string, PyValue>>, 2>;

// RETURNN's cond: only the branch the scalar condition picks is computed;
// each a subnetwork whose output is the branch's value.
PyValue cond_layer(const Lowering& l, Branches& net) {
  const ir::Graph& g = l.facts().g;
  const ir::Node& n = l.node();
  PyValue layer = PyValue::dict({{"class", "cond"}, {"from", PyValue::list({})}});
  layer.set("condition", l.ref(0));
  for (int k = 0; k < 2; ++k) {
    const ir::Node& value = g.node(n.inputs[1 + k]);
    const int64_t* b = value.attrs.find<ir::attr::Branch>();
    PyValue sub = PyValue::dict();
    for (auto& [name, branch_layer] : net[k]) sub.append(name, std::move(branch_layer));
    sub.append("output", PyValue::dict({{"class", "copy"},
                                        {"from", b && *b == k && value.kind != ir::NodeKind::kCond
                                                     ? value.name
                                                     : "base:" + value.name}}));
    layer.set(k == 0 ? "true_layer" : "false_layer",
              PyValue::dict({{"class", "subnetwork"},
                             {"from", PyValue::list({})},
                             {"subnetwork", std::move(sub)}}));
  }
  if (l.facts().is_output[l.index()] && n.name != "output") layer.set("is_output_layer", true);
  return layer;
}

// A layer in a loop's unit: a stacked value is an output of the rec layer;
// a reader of a state over another dynamic dim (accumulated attention
// weights over the encoder's time) that does not feed a next value stays in
// the loop with the state: moved out, RETURNN would stack the state's frames
// along that dim. (The ones feeding a next value stay in the loop anyway;
// collocated, they would depend on themselves.)
void place_in_unit(const Lowering& l, bool feeds_next, PyValue layer, PyValue& unit) {
  const ir::Graph& g = l.facts().g;
  const ir::LoopAnalysis& loops = l.facts().loops;
  const ir::Node& n = l.node();
  if (loops.stacked[l.index()]) layer.set("is_output_layer", true);
  std::vector<PyValue> with;
  for (ir::NodeId in : n.inputs) {
    if (g.node(in).kind == ir::NodeKind::kLoopState && over_other_dynamic_dim(g.node(in)) &&
        !feeds_next)
      with.push_back(PyValue(g.node(loops.next_of_state[in.index]).name));
  }
  if (!with.empty()) layer.set("collocate_with", PyValue::list(std::move(with)));
  unit.append(n.name, std::move(layer));
}

// A loop's rec layer: its unit with "output" (`unit_output`) and, over a
// new axis, RETURNN's "end" layer (the end frame included).
PyValue rec_layer(const GraphFacts& f, size_t id, PyValue unit, const std::string& unit_output) {
  const ir::Graph& g = f.g;
  const ir::LoopAnalysis& loops = f.loops;
  const ir::Loop& loop = loops.loops[id];
  unit.append("output", PyValue::dict({{"class", "copy"}, {"from", unit_output}}));
  if (loop.end.valid()) {
    const ir::NodeId done = g.node(loop.end).inputs[0];
    const std::string from = g.node(done).kind == ir::NodeKind::kLoopState
                                 ? "prev:" + g.node(loops.next_of_state[done.index]).name
                                 : g.node(done).name;
    // RETURNN's search wants an end that depends on the choice (its beam);
    // one that does not (a length) is joined with a condition on the choice
    // that always holds.
    if (loop.choice.valid() && !depends_on(g, done, loop.choice)) {
      unit.append("end_beam", PyValue::dict({{"class", "compare"},
                                             {"from", g.node(loop.choice).name},
                                             {"kind", "greater_equal"},
                                             {"value", 0}}));
      unit.append("end", PyValue::dict({{"class", "combine"},
                                        {"kind", "logical_and"},
                                        {"from", PyValue::list({from, "end_beam"})}}));
    } else {
      unit.append("end", PyValue::dict({{"class", "copy"}, {"from", from}}));
    }
  }
  PyValue rec = PyValue::dict({{"class", "rec"},
                               {"from", PyValue::list({})},
                               {"axis", dim_ref(f.t, *loop.axis)},
                               {"unit", std::move(unit)}});
  if (loop.end.valid()) {
    rec.set("max_seq_len_via", g.node(g.node(loop.end).inputs[1]).name);
    rec.set("include_eos", true);
  }
  return rec;
}

}  // namespace

absl::StatusOr<NetDict> emit_net_dict(const ir::Graph& g, const ir::DimTable* base) {
  ir::DimTable t(g, base);
  ASSIGN_OR_RETURN(const ir::LoopAnalysis loops, ir::analyze_loops(g));
  GraphFacts f{g, t, loops};
  collect_facts(f);
  const std::vector<bool> feeds_next = feeds_next_value(g, loops);
  NetDict out;
  out.uses_linear =
      std::any_of(f.linear_dot.begin(), f.linear_dot.end(), [](int d) { return d >= 0; });
  out.uses_scaled_linear =
      std::any_of(f.linear_scale.begin(), f.linear_scale.end(), [](int d) { return d >= 0; });
  for (size_t i = 0; i < t.dims().size(); ++i) {
    const ir::Dim& d = t.dims()[i];
    if (!t.from_base(i)) out.dims.emplace_back(t.id(d), dim_definition(t, d));
  }
  std::vector<PyValue> units(loops.loops.size(), PyValue::dict());
  // A loop's unit "output": its first stacked value, else its first next value.
  std::vector<std::string> unit_output(loops.loops.size());
  std::vector<bool> unit_output_stacked(loops.loops.size(), false);
  std::map<int64_t, Branches> branches;  // of each cond
  out.extern_data = PyValue::dict();
  out.network = PyValue::dict();
  for (size_t i = 0; i < g.size(); ++i) {
    const ir::Node& n = g.nodes()[i];
    if (n.name.empty())
      return absl::InternalError("emit_net_dict: a node has no name; run tf-naming first");
    if (n.kind == ir::NodeKind::kData) {
      out.extern_data.set(n.attrs.get<ir::attr::Key>(), extern_data_entry(f, i));
      // Marked as an output: a copy layer of the mark's name (RETURNN's
      // outputs are layers; data:KEY is none).
      for (const ir::Mark& m : g.marks()) {
        if (m.node.index != static_cast<int32_t>(i) || m.kind != ir::Mark::Kind::kOutput) continue;
        PyValue copy = PyValue::dict({{"class", "copy"}, {"from", n.name}});
        if (m.name != "output") copy.set("is_output_layer", true);
        out.network.append(m.name, std::move(copy));
      }
      continue;
    }
    if (n.kind == ir::NodeKind::kLoopNext) {
      const int64_t id = n.attrs.get<ir::attr::Loop>();
      if (unit_output[id].empty()) unit_output[id] = n.name;
    }
    if (n.kind == ir::NodeKind::kLoopStack) {
      const int64_t id = n.attrs.get<ir::attr::Loop>();
      if (!unit_output_stacked[id]) unit_output[id] = g.node(n.inputs[0]).name;
      unit_output_stacked[id] = true;
    }
    Lowering l(f, i);
    if (n.kind == ir::NodeKind::kCond) {
      out.network.append(n.name, cond_layer(l, branches[n.attrs.get<ir::attr::Cond>()]));
      continue;
    }
    // Extra layers a lowering adds go where the node's layer goes.
    ASSIGN_OR_RETURN(std::optional<PyValue> layer,
                     lower(l, l.in_loop() >= 0 ? units[l.in_loop()] : out.network));
    if (!layer) continue;
    if (const int64_t* b = n.attrs.find<ir::attr::Branch>()) {
      branches[n.attrs.get<ir::attr::Cond>()][*b].emplace_back(n.name, *std::move(layer));
      continue;
    }
    if (f.is_output[i] && n.name != "output") layer->set("is_output_layer", true);
    if (l.in_loop() >= 0) {
      place_in_unit(l, feeds_next[i], *std::move(layer), units[l.in_loop()]);
      continue;
    }
    out.network.append(n.name, *std::move(layer));  // names are unique (tf-naming)
  }
  for (size_t id = 0; id < loops.loops.size(); ++id) {
    if (f.loop_names[id].empty()) continue;
    out.network.append(f.loop_names[id], rec_layer(f, id, std::move(units[id]), unit_output[id]));
  }
  for (const ir::Param& p : g.params()) {
    if (p.options.weight_decay.value != 0.0)
      out.decouple_weight_decay = !p.options.weight_decay.coupled;
  }
  return out;
}

}  // namespace retc::emit::tf

namespace retc::emit::tf {

const char kScatterDefinitions[] = R"PY(

def _retc_scatter_type(sources, name, axis, **_kwargs):
    """retc: the output of a scatter eval layer: the indices' dims (the out dim in place
    of `axis`), then the other dims of the values."""
    from returnn.tf.util.data import Data

    x, idx = sources[0].output, sources[1].output
    dims = [idx.sparse_dim if d == axis else d for d in idx.dim_tags]
    dims += [d for d in x.dim_tags if d not in idx.dim_tags]
    return Data(name="%s_output" % name, dims=dims, dtype=x.dtype)


def _retc_scatter(self, source, *, axis, mode, fill):
    """retc: the values source(0) along `axis` combined by `mode` (sum, max, min) into
    the out dim at the indices source(1) (TF's unsorted segment ops); frames past the
    axis's lengths and indices outside the out dim write nothing; entries nothing
    writes are `fill`."""
    import tensorflow as tf
    from returnn.tf.util.data import Data

    x, idx = (source(i, auto_convert=False, as_data=True) for i in (0, 1))
    nd, p = idx.batch_ndim, idx.dim_tags.index(axis)
    extra = [d for d in x.dim_tags if d not in idx.dim_tags]
    common = Data(name="scatter_values", dims=list(idx.dim_tags) + extra, dtype=x.dtype)
    values = x.copy_compatible_to(common, check_sparse=False, check_dtype=False).placeholder
    iv = tf.cast(idx.placeholder, tf.int64)
    shape = tf.shape(iv, out_type=tf.int64)
    feat_shape = tf.shape(values, out_type=tf.int64)[nd:]
    values = tf.broadcast_to(values, tf.concat([shape, feat_shape], 0))
    n_out = tf.cast(idx.sparse_dim.get_dim_value(), tf.int64)
    valid = tf.logical_and(iv >= 0, iv < n_out)
    if axis.is_dynamic():
        valid = tf.logical_and(valid, idx.get_sequence_mask_broadcast(axis=p))
    out_shape = tf.concat([shape[:p], [n_out], shape[p + 1:]], 0)
    segment, stride = tf.zeros_like(iv), tf.constant(1, tf.int64)
    for i in reversed(range(nd)):
        coord = iv if i == p else tf.reshape(tf.range(shape[i]), [1] * i + [-1] + [1] * (nd - i - 1))
        segment, stride = segment + coord * stride, stride * out_shape[i]
    segment = tf.reshape(tf.where(valid, segment, -1), [-1])  # -1: dropped
    num = tf.reduce_prod(out_shape)
    combine = {"sum": tf.math.unsorted_segment_sum, "max": tf.math.unsorted_segment_max,
               "min": tf.math.unsorted_segment_min}[mode]
    out = combine(tf.reshape(values, tf.concat([[-1], feat_shape], 0)), segment, num)
    count = tf.math.unsorted_segment_sum(tf.ones_like(segment, tf.int32), segment, num)
    written = tf.reshape(count > 0, tf.concat([[-1], tf.ones_like(feat_shape)], 0))
    out = tf.where(written, out, tf.cast(fill, out.dtype))
    out = tf.reshape(out, tf.concat([out_shape, feat_shape], 0))
    out_dims = [idx.sparse_dim if d == axis else d for d in idx.dim_tags] + extra
    result = Data(name="scatter_out", dims=out_dims, dtype=x.dtype, placeholder=out)
    return result.copy_compatible_to(self.output).placeholder
)PY";

const char kNormDefinitions[] = R"PY(

def _retc_norm_type(sources, name, axis, **_kwargs):
    """retc: the output of a norm eval layer: its source's dims but `axis` (a dim or a list)."""
    from returnn.tf.util.data import Data

    x = sources[0].output
    axes = x.get_axes_from_description(axis)
    return Data(name="%s_output" % name, dims=[d for i, d in enumerate(x.dim_tags) if i not in axes],
                dtype=x.dtype)


def _retc_norm(self, source, *, axis):
    """retc: the L2 norm of source(0) over `axis` (a dim or a list), sqrt(sum(x^2)); its
    gradient is x times the norm's gradient over the norm (0 where the norm is 0), one
    product over x (RETURNN's math_norm: abs and pow, and their gradients)."""
    import tensorflow as tf
    from returnn.tf.util.data import Data

    x = source(0, auto_convert=False, as_data=True)
    axes = x.get_axes_from_description(axis)  # the first of a dim that x has twice (a square weight)

    @tf.custom_gradient
    def norm(v):
        n = tf.math.reduce_euclidean_norm(v, axis=axes, keepdims=True)  # no v**2 made

        def grad(dn):
            return v * tf.math.divide_no_nan(tf.reshape(dn, tf.shape(n)), n)

        return tf.squeeze(n, axes), grad

    out = Data(name="norm_out", dims=[d for i, d in enumerate(x.dim_tags) if i not in axes], dtype=x.dtype,
               placeholder=norm(x.placeholder))
    return out.copy_compatible_to(self.output).placeholder
)PY";

const char kLinearDefinitions[] = R"PY(

def _retc_linear_type(sources, name, reduce, **_kwargs):
    """retc: the output of a linear eval layer: source(0)'s dims, `reduce` replaced by the
    weight's other dim."""
    x, w = sources[0].output, sources[1].output
    out_dim = w.dim_tags[1 - w.get_axis_from_description(reduce)]
    return x.copy_template_replace_dim_tag(axis=x.get_axis_from_description(reduce), new_dim_tag=out_dim,
                                           name="%s_output" % name)


def _retc_linear(self, source, *, reduce, norm_here=False):
    """retc: source(0) . source(1) over `reduce` (times source(3) where given: weight norm's
    g / |v|, or with norm_here g, by _retc_scaled_linear), plus the bias source(2): one matmul
    and tf.nn.bias_add on its 2-d result, which TF's oneDNN remapper fuses into one kernel; the
    gradient written out (_retc_plain_linear)."""
    import tensorflow as tf
    from returnn.tf.util.data import Data

    x = source(0, auto_convert=False, as_data=True)
    w = source(1, auto_convert=False, as_data=True)
    b = source(2, auto_convert=False, as_data=True)
    x = x.copy_move_axis(x.get_axis_from_description(reduce), -1)
    w_in = w.get_axis_from_description(reduce)  # the first of a square weight's
    out_dim = w.dim_tags[1 - w_in]
    xp = x.placeholder
    x2 = tf.reshape(xp, [-1, x.dim_tags[-1].dimension])
    if len(self.sources) == 4:
        y = _retc_scaled_linear(x2, w.placeholder, source(3, auto_convert=False), b.placeholder, w_in, norm_here)
    else:
        y = _retc_plain_linear(x2, w.placeholder, b.placeholder, w_in)
    y = tf.reshape(y, tf.concat([tf.shape(xp)[:-1], [out_dim.dimension]], 0))
    out = Data(name="linear_out", dims=x.dim_tags[:-1] + (out_dim,), dtype=x.dtype, placeholder=y)
    return out.copy_compatible_to(self.output).placeholder


def _retc_dot(a, b, transpose_b):
    """retc: a . b, or a . b^T for transpose_b, of 2-d a and b; b^T as a batch of one
    (BatchMatMulV2 with adj_y): TF's MatMul with transpose_b runs oneDNN's slow path on the CPU
    (a 100 x 2048 by 2048 x 512 product 2.37 ms against 1.06 ms, at 1,000 rows 13.7 against
    9.6 ms), and it is what TF's gradient of a matmul uses for the gradient of its input."""
    import tensorflow as tf

    return tf.linalg.matmul(a[None], b[None], adjoint_b=True)[0] if transpose_b else tf.matmul(a, b)


def _retc_dot_t(a, c, w_in):
    """retc: a^T . c for 2-d a and c, in the layout of a weight [in, out] (w_in 0) or [out, in]
    (w_in 1): a weight's gradient from its input a and the product's gradient c."""
    import tensorflow as tf

    return tf.matmul(c, a, transpose_a=True) if w_in == 1 else tf.matmul(a, c, transpose_a=True)


def _retc_plain_linear(x2, w, b, w_in):
    """retc: x2 . w + b for x2 [rows, in], w [in, out] (w_in 0; w_in 1: [out, in], times w^T),
    b [out]; the gradient written out, its products without MatMul's transpose_b (_retc_dot)."""
    import tensorflow as tf

    tb = w_in == 1

    @tf.custom_gradient
    def plain_linear(x2, w, b):
        y = tf.nn.bias_add(_retc_dot(x2, w, tb), b)

        def grad(dy):
            db = tf.raw_ops.BiasAddGrad(out_backprop=dy)
            return _retc_dot(dy, w, not tb), _retc_dot_t(x2, dy, w_in), db

        return y, grad

    return plain_linear(x2, w, b)
)PY";

const char kScaledLinearDefinitions[] = R"PY(

def _retc_weight_norm_ops():
    """retc: the CPU ops of runtime/tf/weight_norm_ops.cc (RetcAxisDot, RetcAxisScaleAdd), which
    tools/setup.sh builds into retc's venv beside retc_venv_hook; loaded once. None where this
    Python has none, where TF sees a GPU (CPU kernels only) or RETC_TF_WEIGHT_NORM_OPS=0 is set:
    then TF's own ops compute the same."""
    import os
    import sys
    import tensorflow as tf

    choice = os.environ.get("RETC_TF_WEIGHT_NORM_OPS", "1")
    if choice not in ("0", "1"):
        raise ValueError("RETC_TF_WEIGHT_NORM_OPS must be 1 (retc's ops, the default) or 0 (TF's own), not %r"
                         % choice)
    if choice == "0":
        return None
    cache = _retc_weight_norm_ops.__dict__
    if "ops" not in cache:
        cache["ops"] = None
        try:
            import retc_venv_hook
        except ImportError:  # not retc's venv
            return None
        path = os.path.join(os.path.dirname(retc_venv_hook.__file__), "retc_tf_ops.so")
        if os.path.exists(path) and not tf.config.list_physical_devices("GPU"):
            try:
                cache["ops"] = tf.load_op_library(path)
            except (tf.errors.NotFoundError, OSError) as e:
                print("retc: %s did not load (%s); weight norm takes TF's own ops; tools/setup.sh "
                      "builds it again" % (path, str(e).strip().splitlines()[-1]), file=sys.stderr)
    return cache["ops"]


def _retc_scaled_linear(x2, v, s, b, w_in, norm_here=False):
    """retc: x2 . (v * s) + b for x2 [rows, in], v [in, out] (w_in 0) or [out, in] (w_in 1), s and
    b [out]: weight norm's s = g / |v|, the norm over v's in axis; with norm_here, s is g, and |v|
    and its gradient are computed here. With few rows (at most half the in dim) the product is
    scaled, (x2 . v) * s (no weight-sized tensor made), else the weight (then matmul and bias are
    one oneDNN kernel), as on torch; the gradient in closed form by the same choice, a tf.cond in
    each direction (TF's gradient of a cond would make zeros of the branch not taken and
    accumulate through variables). With norm_here, v's gradient (the product's share and the
    norm's) is one pass, RetcAxisScaleAdd, and |v|^2 RetcAxisDot (_retc_weight_norm_ops), where
    TF's ops took more passes over the weight (a Conformer's step at 2 x 200 against the plain
    one: 1.18x and 1.14x before, 1.10x and 1.08x with these, in two runs)."""
    import tensorflow as tf

    ops = _retc_weight_norm_ops() if norm_here else None
    tb = w_in == 1

    def over_out(a):  # a vector of the out dim, as it multiplies v
        return a if w_in == 0 else a[:, None]

    def axis_dot(a, c):  # the sum over the in axis of a * c
        return ops.retc_axis_dot(a, c, axis=w_in) if ops else tf.reduce_sum(a * c, w_in)

    @tf.custom_gradient
    def scaled_linear(x2, v, s_in, b):
        if norm_here:
            n = tf.sqrt(axis_dot(v, v)) if ops else tf.math.reduce_euclidean_norm(v, axis=w_in)
            s = s_in / n
        else:
            s = s_in
        fold = 2 * tf.shape(x2)[0] <= x2.shape[-1]

        def by_product():
            z = _retc_dot(x2, v, tb)
            return tf.nn.bias_add(tf.multiply(z, s, name="scaled_product"), b), z, tf.zeros([0, 0], v.dtype)

        def by_weight():
            ws = tf.multiply(v, over_out(s), name="scaled_weight")
            y = tf.nn.bias_add(_retc_dot(x2, ws, tb), b)
            return y, tf.zeros([0, 0], v.dtype), ws

        y, z, ws = tf.cond(fold, by_product, by_weight)

        def grad(dy):
            def dv_of(gw, r, ds):
                # gw * r (r None: 1), the product's share of v's gradient, plus with norm_here
                # the norm's, v * c with c = -ds * s / |v|^2 (0 where |v| is 0).
                if not norm_here:
                    return gw if r is None else gw * over_out(r)
                c = -tf.math.divide_no_nan(ds * s, n * n)
                if ops:
                    return ops.retc_axis_scale_add(gw, tf.ones_like(s) if r is None else r, v, c, axis=w_in)
                return (gw if r is None else gw * over_out(r)) + v * over_out(c)

            def by_product():
                dz = dy * s
                ds = tf.reduce_sum(dy * z, 0)
                return _retc_dot(dz, v, not tb), dv_of(_retc_dot_t(x2, dz, w_in), None, ds), ds

            def by_weight():
                gw = _retc_dot_t(x2, dy, w_in)
                ds = axis_dot(gw, v)
                return _retc_dot(dy, ws, not tb), dv_of(gw, s, ds), ds

            dx, dv, ds = tf.cond(fold, by_product, by_weight)
            return dx, dv, ds / n if norm_here else ds, tf.raw_ops.BiasAddGrad(out_backprop=dy)

        return y, grad

    return scaled_linear(x2, v, s, b)
)PY";

const char kNormalizeDefinitions[] = R"PY(

def _retc_normalize(self, source, *, axis, epsilon):
    """retc: (x - mean) / sqrt(variance + epsilon) of source(0) over `axis` (a list of
    dims), the variance biased, as RETURNN's norm layer; its gradient in closed form,
    rstd * (dy - mean(dy) - y * mean(dy * y)), five ops over all of x where autodiff of the
    mean and variance made eleven."""
    import tensorflow as tf
    from returnn.tf.util.data import Data

    x = source(0, auto_convert=False, as_data=True)
    axes = x.get_axes_from_description(axis)

    @tf.custom_gradient
    def normalize(v):
        xc = v - tf.reduce_mean(v, axis=axes, keepdims=True)
        rstd = tf.math.rsqrt(tf.reduce_mean(tf.square(xc), axis=axes, keepdims=True) + epsilon)
        y = xc * rstd

        def grad(dy):
            m1 = tf.reduce_mean(dy, axis=axes, keepdims=True)
            m2 = tf.reduce_mean(dy * y, axis=axes, keepdims=True)
            return rstd * (dy - m1 - y * m2)

        return y, grad

    out = Data(name="normalize_out", dims=x.dim_tags, dtype=x.dtype, placeholder=normalize(x.placeholder))
    return out.copy_compatible_to(self.output).placeholder
)PY";

const char kAssignDefinitions[] = R"PY(

def _retc_assign_type(name, **_kwargs):
    """retc: a param assignment's output: nothing (an int32 scalar)."""
    from returnn.tf.util.data import Data

    return Data(name="%s_output" % name, dims=(), dtype="int32")


def _retc_assign(self, source, *, op):
    """retc: in a training step, the variable that the second source reads (its one
    read, a variable_read layer) becomes the first source's value (op assign) or adds
    it (op add), after that read; RETURNN runs it with the step (the network's post
    control dependencies, as its batch norm's statistics update). In evaluation it
    does nothing."""
    import tensorflow as tf

    value, read = (source(i, auto_convert=False, as_data=True) for i in (0, 1))  # (each used)
    var = self.sources[1].tf_var
    with tf.control_dependencies([read.placeholder.op]):
        value = tf.identity(value.copy_compatible_to(read).placeholder)

    def update():
        change = var.assign if op == "assign" else var.assign_add
        with tf.control_dependencies([change(tf.cast(value, var.dtype.base_dtype), read_value=False)]):
            return tf.constant(True)

    self.network.register_post_control_dependencies(
        [self.network.cond_on_train(update, lambda: tf.constant(False))])
    return tf.zeros((), tf.int32)
)PY";

}  // namespace retc::emit::tf
