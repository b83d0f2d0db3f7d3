#include "emit/net_dict.h"

#include <algorithm>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "ir/dim_table.h"
#include "ir/loops.h"

namespace retc::emit {
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
      switch (d.op()) {
        case ir::Dim::Op::kAdd:
          return PyValue::binop(dim_ref(t, d.operands()[0]), "+", dim_ref(t, d.operands()[1]));
        case ir::Dim::Op::kMul:
          return PyValue::binop(d.factor(), "*", dim_ref(t, d.operands()[0]));
        case ir::Dim::Op::kFloorDiv:
          return PyValue::binop(dim_ref(t, d.operands()[0]), "//", d.factor());
        case ir::Dim::Op::kNone:
          break;
      }
  }
  return PyValue();
}

PyValue ints_value(const std::vector<int64_t>& v) {
  std::vector<PyValue> items(v.begin(), v.end());
  return PyValue::list(std::move(items));
}

// Strides and spatial dims of a windowed op (conv, pool).
void set_windowed(PyValue& layer, const ir::DimTable& t, const ir::Node& n) {
  const auto& strides = *n.attrs.get<std::vector<int64_t>>("strides");
  if (std::any_of(strides.begin(), strides.end(), [](int64_t s) { return s != 1; }))
    layer.set("strides", ints_value(strides));
  const auto& axes = *n.attrs.get<std::vector<ir::Dim>>("axes");
  // Frames past a sequence's end hold arbitrary values: masked (conv: 0,
  // max: -inf), they never leak into the frames before the end. (Avg pool
  // over a dynamic axis is "valid" only, windows within the sequence;
  // RETURNN could not mask it: an int mask value for float data.)
  const std::string* mode = n.attrs.get<std::string>("mode");
  if ((!mode || *mode == "max") &&
      std::any_of(axes.begin(), axes.end(), [](const ir::Dim& d) { return d.is_dynamic(); }))
    layer.set("use_time_mask", true);
  layer.set("in_spatial_dims", dims_value(t, axes));
  layer.set("out_spatial_dims", dims_value(t, *n.attrs.get<std::vector<ir::Dim>>("out_axes")));
}

// `reuse_params` that take each named variable of a RETURNN layer from a
// retc variable layer: {"map": {name: {"layer_output": layer}}}.
PyValue reuse_params(std::initializer_list<std::pair<const char*, PyValue>> vars) {
  PyValue map = PyValue::dict();
  for (const auto& [name, layer] : vars) map.set(name, PyValue::dict({{"layer_output", layer}}));
  return PyValue::dict({{"map", std::move(map)}});
}

// loss_opts (`opts` plus use_normalized_loss) and loss_scale of a loss node.
void set_loss_options(PyValue& layer, const ir::Node& n, PyValue opts) {
  if (const bool* z = n.attrs.get<bool>("normalize"); z && *z)
    opts.set("use_normalized_loss", true);
  if (!opts.items().empty()) layer.set("loss_opts", std::move(opts));
  if (const double* s = n.attrs.get<double>("scale")) layer.set("loss_scale", *s);
}

absl::Status unsupported(const ir::Node& n, absl::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat(n.loc.str(), ": error: ", node_kind_name(n.kind),
                   n.module_path.empty() ? "" : " in '" + n.module_path + "'", ": ", what));
}

}  // namespace

absl::StatusOr<NetDict> emit_net_dict(const ir::Graph& g) {
  ir::DimTable t(g);
  NetDict out;
  for (const ir::Dim& d : t.dims()) out.dims.emplace_back(t.id(d), dim_definition(t, d));

  std::vector<bool> is_loss(g.size(), false), is_output(g.size(), false);
  for (const ir::Mark& m : g.marks()) {
    (m.kind == ir::Mark::Kind::kLoss ? is_loss : is_output)[m.node.index] = true;
  }
  std::vector<bool> is_target(g.size(), false);  // data read as a loss's target
  std::vector<int> uses(g.size(), 0);
  for (const ir::Node& n : g.nodes()) {
    for (ir::NodeId in : n.inputs) ++uses[in.index];
    if (n.kind == ir::NodeKind::kCrossEntropy || n.kind == ir::NodeKind::kCtcLoss ||
        n.kind == ir::NodeKind::kRegressionLoss)
      is_target[n.inputs[1].index] = true;
  }

  // Loops: each becomes a `rec` layer whose subnetwork unit holds the
  // nodes computed in it; a state is read as `prev:<its next value>`.
  auto analysis = ir::analyze_loops(g);
  if (!analysis.ok()) return analysis.status();
  const std::vector<int32_t>& loop = analysis->loop_of;
  struct LoopOut {
    std::string name;
    std::optional<ir::Dim> axis;
    PyValue unit = PyValue::dict();
    std::string output;  // the unit's "output": the first stacked value, else a next value
    bool output_stacked = false;
  };
  std::vector<LoopOut> loops;
  std::vector<int32_t> next_of_state(g.size(), -1);
  std::vector<bool> stacked(g.size(), false);
  absl::flat_hash_set<std::string> names;
  for (const ir::Node& n : g.nodes()) names.insert(n.name);
  for (size_t i = 0; i < g.size(); ++i) {
    const ir::Node& n = g.nodes()[i];
    const int64_t* id = n.attrs.get<int64_t>("loop");
    if (!id) continue;
    if (loops.size() <= static_cast<size_t>(*id)) loops.resize(*id + 1);
    LoopOut& l = loops[*id];
    if (const ir::Dim* axis = n.attrs.get<ir::Dim>("axis"); axis && !l.axis) l.axis = *axis;
    if (l.name.empty()) {
      std::string base = n.module_path.empty() ? "loop" : n.module_path + ".loop";
      l.name = base;
      for (int k = 2; names.contains(l.name); ++k) l.name = absl::StrCat(base, "_", k);
      names.insert(l.name);
    }
    if (n.kind == ir::NodeKind::kLoopNext) {
      next_of_state[n.inputs[0].index] = static_cast<int32_t>(i);
      if (l.output.empty()) l.output = n.name;
    }
    if (n.kind == ir::NodeKind::kLoopStack) {
      stacked[n.inputs[0].index] = true;
      if (!l.output_stacked) l.output = g.node(n.inputs[0]).name;
      l.output_stacked = true;
    }
  }

  std::optional<bool> decoupled;  // of the weight decay, once a param has some
  out.extern_data = PyValue::dict();
  out.network = PyValue::dict();
  for (size_t i = 0; i < g.size(); ++i) {
    const ir::Node& n = g.nodes()[i];
    if (n.name.empty())
      return absl::InternalError("emit_net_dict: a node has no name; run naming first");
    const int32_t in_loop = n.kind == ir::NodeKind::kLoopStack ? -1 : loop[i];
    auto ref = [&](size_t k) {
      const ir::NodeId in = n.inputs[k];
      const ir::Node& src = g.node(in);
      const int32_t src_loop = loop[in.index];
      if (in_loop >= 0 && src_loop == in_loop) {
        if (src.kind == ir::NodeKind::kLoopState)
          return PyValue("prev:" + g.node(ir::NodeId{next_of_state[in.index]}).name);
        return PyValue(src.name);
      }
      if (in_loop >= 0) return PyValue("base:" + src.name);
      if (src_loop >= 0) return PyValue(loops[src_loop].name + "/" + src.name);
      return PyValue(src.name);
    };
    // A loss node reads extern data as its target and is only marked.
    auto check_loss = [&](const ir::Node& node, const ir::Node& target,
                          absl::string_view what) -> absl::Status {
      if (target.kind != ir::NodeKind::kData)
        return unsupported(node, absl::StrCat(what, " must be extern data"));
      if (!is_loss[i] || uses[i] > 0)
        return unsupported(node, "the result may only be marked as a loss, not used further");
      return absl::OkStatus();
    };
    auto from = [&]() {
      if (n.inputs.size() == 1) return ref(0);
      std::vector<PyValue> v;
      for (size_t k = 0; k < n.inputs.size(); ++k) v.push_back(ref(k));
      return PyValue::list(std::move(v));
    };
    PyValue layer = PyValue::dict();
    switch (n.kind) {
      case ir::NodeKind::kData: {
        PyValue d = PyValue::dict({{"dim_tags", dims_value(t, n.type.dims)}});
        if (n.type.dtype != ir::DType::kFloat32)
          d.set("dtype", std::string(dtype_name(n.type.dtype)));
        if (n.type.sparse_dim) d.set("sparse_dim", dim_ref(t, *n.type.sparse_dim));
        // RETURNN treats keys besides "data" as targets, missing in
        // evaluation inside loops; data that no loss reads as its target is
        // an input.
        const std::string& key = *n.attrs.get<std::string>("key");
        if (key != "data" && !is_target[i]) d.set("available_for_inference", true);
        out.extern_data.set(key, std::move(d));
        continue;
      }
      case ir::NodeKind::kParam: {
        const ir::Param& p = g.param(n.param);
        layer.set("class", "variable");
        layer.set("shape", dims_value(t, p.dims));
        if (p.dtype != ir::DType::kFloat32) layer.set("dtype", std::string(dtype_name(p.dtype)));
        const ir::ParamOptions& o = p.options;
        if (o.init_node >= 0) {
          layer.set("init_by_layer", g.node(ir::NodeId{o.init_node}).name);
        } else {
          layer.set("init", o.initial.value);
        }
        if (!o.trainable) layer.set("trainable", false);
        layer.set("name_scope", "/" + absl::StrReplaceAll(p.path, {{".", "/"}}));
        layer.set("param_name", "param");
        if (o.weight_decay.value != 0.0) {
          if (decoupled && *decoupled == o.weight_decay.coupled) {
            return absl::InvalidArgumentError(
                absl::StrCat(p.loc.str(), ": error: param '", p.path,
                             "': RETURNN applies weight decay either all coupled or all decoupled "
                             "(global decouple_constraints); this model mixes both"));
          }
          decoupled = !o.weight_decay.coupled;
          layer.set("L2", o.weight_decay.value);
        }
        PyValue updater = PyValue::dict();
        if (o.lr_multiplier != 1.0) {
          updater.set("optimizer", PyValue::dict({{"learning_rate_multiplier", o.lr_multiplier}}));
        }
        if (o.gradient_clip != 0.0) updater.set("gradient_clip", o.gradient_clip);
        if (!updater.items().empty()) layer.set("updater_opts", std::move(updater));
        if (!o.device.empty()) layer.set("param_device", o.device);
        if (o.noise != 0.0) layer.set("param_variational_noise", o.noise);
        if (o.dropout != 0.0) layer.set("param_dropout", o.dropout);
        // RETURNN constructs only layers that outputs and losses need; a
        // param nothing reads must still become a variable (checkpoint).
        if (uses[i] == 0) layer.set("is_output_layer", true);
        break;
      }
      case ir::NodeKind::kAdd:
      case ir::NodeKind::kSub:
      case ir::NodeKind::kMul:
      case ir::NodeKind::kDiv:
        layer.set("class", "combine");
        layer.set("from", from());
        layer.set("kind", n.kind == ir::NodeKind::kDiv ? std::string("truediv")
                                                       : std::string(node_kind_name(n.kind)));
        break;
      case ir::NodeKind::kNorm: {
        const auto& axes = *n.attrs.get<std::vector<ir::Dim>>("axes");
        layer.set("class", "math_norm");
        layer.set("from", from());
        layer.set("p", 2);
        layer.set("axis", axes.size() == 1 ? dim_ref(t, axes[0]) : dims_value(t, axes));
        break;
      }
      case ir::NodeKind::kRandom: {
        // Stateless with a fixed seed: the same values whenever evaluated.
        layer.set("class", "random");
        layer.set("shape", dims_value(t, *n.attrs.get<std::vector<ir::Dim>>("shape")));
        layer.set("distribution", *n.attrs.get<std::string>("distribution"));
        for (const char* key : {"mean", "stddev", "minval", "maxval"}) {
          if (const double* v = n.attrs.get<double>(key)) layer.set(key, *v);
        }
        layer.set("seed", *n.attrs.get<int64_t>("seed"));
        layer.set("static", true);
        break;
      }
      case ir::NodeKind::kConstant:
        layer.set("class", "constant");
        layer.set("value", *n.attrs.get<double>("value"));
        layer.set("shape", dims_value(t, *n.attrs.get<std::vector<ir::Dim>>("shape")));
        break;
      case ir::NodeKind::kWeightNorm:
      case ir::NodeKind::kWeightDropout:
      case ir::NodeKind::kWeightNoise:
        return absl::InternalError(absl::StrCat("emit_net_dict: unexpanded parametrization node '",
                                                n.name, "'; run expand-parametrizations first"));
      case ir::NodeKind::kDot: {
        const auto& reduce = *n.attrs.get<std::vector<ir::Dim>>("reduce");
        layer.set("class", "dot");
        layer.set("from", from());
        layer.set("reduce", reduce.size() == 1 ? dim_ref(t, reduce[0]) : dims_value(t, reduce));
        break;
      }
      case ir::NodeKind::kActivation:
        layer.set("class", "activation");
        layer.set("from", from());
        layer.set("activation", *n.attrs.get<std::string>("func"));
        break;
      case ir::NodeKind::kDropout:
        // RETURNN's default mask is shared over batch and time; the IR
        // names the axes along which it varies.
        layer.set("class", "dropout");
        layer.set("from", from());
        layer.set("dropout", *n.attrs.get<double>("rate"));
        layer.set("dropout_axis", dims_value(t, *n.attrs.get<std::vector<ir::Dim>>("axes")));
        break;
      case ir::NodeKind::kReduce:
        layer.set("class", "reduce");
        layer.set("from", from());
        layer.set("mode", *n.attrs.get<std::string>("mode"));
        layer.set("axes", dims_value(t, *n.attrs.get<std::vector<ir::Dim>>("axes")));
        break;
      case ir::NodeKind::kNormalize:
        // RETURNN's norm layer without its own params: retc's modules own them.
        layer.set("class", "norm");
        layer.set("from", from());
        layer.set("axes", dims_value(t, *n.attrs.get<std::vector<ir::Dim>>("axes")));
        layer.set("scale", false);
        layer.set("bias", false);
        layer.set("epsilon", *n.attrs.get<double>("epsilon"));
        break;
      case ir::NodeKind::kGather:
        layer.set("class", "gather");
        layer.set("from", ref(0));
        layer.set("position", ref(1));
        layer.set("axis", dim_ref(t, *n.attrs.get<ir::Dim>("axis")));
        break;
      case ir::NodeKind::kConcat:
        layer.set("class", "concat");
        layer.set(
            "from",
            PyValue::list({PyValue::tuple({ref(0), dim_ref(t, *n.attrs.get<ir::Dim>("axis_a"))}),
                           PyValue::tuple({ref(1), dim_ref(t, *n.attrs.get<ir::Dim>("axis_b"))})}));
        layer.set("out_dim", dim_ref(t, *n.attrs.get<ir::Dim>("out_dim")));
        break;
      case ir::NodeKind::kSoftmax:
        layer.set("class", "softmax_over_spatial");
        layer.set("from", from());
        layer.set("axis", dim_ref(t, *n.attrs.get<ir::Dim>("axis")));
        if (*n.attrs.get<bool>("log")) layer.set("log_space", true);
        break;
      case ir::NodeKind::kSelfAttention:
        // RETURNN's fused self-attention; its QKV matrix is retc's param.
        layer.set("class", "self_attention");
        layer.set("from", ref(0));
        layer.set("num_heads", *n.attrs.get<int64_t>("num_heads"));
        layer.set("total_key_dim", *n.attrs.get<ir::Dim>("key_dim")->size());
        layer.set("out_dim", dim_ref(t, *n.attrs.get<ir::Dim>("out_dim")));
        if (*n.attrs.get<bool>("causal")) layer.set("attention_left_only", true);
        layer.set("reuse_params", reuse_params({{"QKV", ref(1)}}));
        if (n.inputs.size() == 3) {
          // Relative positions: RETURNN's encoding layer on retc's table,
          // added to the keys (key_shift).
          const ir::Node& table = g.node(n.inputs[2]);
          std::string rel = n.name + "_rel_pos";
          if (!names.insert(rel).second)
            return unsupported(n, "the layer name '" + rel + "' is taken");
          out.network.append(rel, PyValue::dict({
                                      {"class", "relative_positional_encoding"},
                                      {"from", ref(0)},
                                      {"out_dim", dim_ref(t, table.type.dims[1])},
                                      {"clipping", *n.attrs.get<int64_t>("clipping")},
                                      {"reuse_params", reuse_params({{"encoding_matrix", ref(2)}})},
                                  }));
          layer.set("key_shift", rel);
        }
        break;
      case ir::NodeKind::kConv: {
        // RETURNN's conv with retc's filter and bias as layers.
        const ir::Node& w = g.node(n.inputs[1]);
        const auto& axes = *n.attrs.get<std::vector<ir::Dim>>("axes");
        std::vector<PyValue> kernel;
        for (size_t k = 0; k < axes.size(); ++k) kernel.push_back(dim_ref(t, w.type.dims[k]));
        layer.set("class", "conv");
        layer.set("from", ref(0));
        layer.set("filter_size", PyValue::list(std::move(kernel)));
        layer.set("padding", *n.attrs.get<std::string>("padding"));
        set_windowed(layer, t, n);
        if (*n.attrs.get<int64_t>("dilation") != 1)
          layer.set("dilation_rate", *n.attrs.get<int64_t>("dilation"));
        const int64_t groups = *n.attrs.get<int64_t>("groups");
        if (groups != 1) layer.set("groups", groups);
        const ir::Dim& w_in = w.type.dims[axes.size()];
        layer.set("in_dim", dim_ref(t, groups == 1 ? w_in : w_in.operands()[0]));
        layer.set("out_dim", dim_ref(t, w.type.dims.back()));
        layer.set("filter", ref(1));
        layer.set("bias", ref(2));
        layer.set("with_bias", true);
        break;
      }
      case ir::NodeKind::kPool:
        layer.set("class", "pool");
        layer.set("from", ref(0));
        layer.set("mode", *n.attrs.get<std::string>("mode"));
        layer.set("pool_size", ints_value(*n.attrs.get<std::vector<int64_t>>("size")));
        layer.set("padding", *n.attrs.get<std::string>("padding"));
        set_windowed(layer, t, n);
        break;
      case ir::NodeKind::kSlice: {
        const int64_t start = *n.attrs.get<int64_t>("start");
        const ir::Dim& out_dim = *n.attrs.get<ir::Dim>("out_dim");
        layer.set("class", "slice");
        layer.set("from", ref(0));
        layer.set("axis", dim_ref(t, *n.attrs.get<ir::Dim>("axis")));
        layer.set("slice_start", start);
        layer.set("slice_end", start + *out_dim.size());
        layer.set("out_dim", dim_ref(t, out_dim));
        break;
      }
      case ir::NodeKind::kSplitDims:
        layer.set("class", "split_dims");
        layer.set("from", ref(0));
        layer.set("axis", dim_ref(t, *n.attrs.get<ir::Dim>("axis")));
        layer.set("dims", dims_value(t, *n.attrs.get<std::vector<ir::Dim>>("dims")));
        break;
      case ir::NodeKind::kMergeDims:
        layer.set("class", "merge_dims");
        layer.set("from", ref(0));
        layer.set("axes", dims_value(t, *n.attrs.get<std::vector<ir::Dim>>("axes")));
        layer.set("out_dim", dim_ref(t, *n.attrs.get<ir::Dim>("out_dim")));
        layer.set("keep_order", true);
        break;
      case ir::NodeKind::kBatchNorm:
        // RETURNN's batch_norm (statistics over all frames but padding) on
        // retc's variables: running mean and variance are non-trainable
        // params that the layer updates in training.
        layer.set("class", "batch_norm");
        layer.set("from", ref(0));
        layer.set("in_dim", dim_ref(t, *n.attrs.get<ir::Dim>("axis")));
        layer.set("masked_time", true);
        layer.set("epsilon", *n.attrs.get<double>("epsilon"));
        layer.set("momentum", *n.attrs.get<double>("momentum"));
        layer.set("reuse_params", reuse_params({{"batch_norm/v2_mean", ref(1)},
                                                {"batch_norm/v2_variance", ref(2)},
                                                {"batch_norm/v2_gamma", ref(3)},
                                                {"batch_norm/v2_beta", ref(4)}}));
        break;
      case ir::NodeKind::kShiftAxis:
        layer.set("class", "shift_axis");
        layer.set("from", ref(0));
        layer.set("axis", dim_ref(t, *n.attrs.get<ir::Dim>("axis")));
        layer.set("amount", *n.attrs.get<int64_t>("amount"));
        layer.set("pad", true);
        layer.set("adjust_size_info", false);
        break;
      case ir::NodeKind::kPosEncoding:
        layer.set("class", "positional_encoding");
        layer.set("from", ref(0));
        layer.set("axis", dim_ref(t, *n.attrs.get<ir::Dim>("axis")));
        layer.set("add_to_input", true);
        break;
      case ir::NodeKind::kSeqMask:
        layer.set("class", "seq_len_mask");
        layer.set("from", ref(0));
        layer.set("axis", dim_ref(t, *n.attrs.get<ir::Dim>("axis")));
        layer.set("mask_value", *n.attrs.get<double>("value"));
        break;
      case ir::NodeKind::kScaleGrad:
        layer.set("class", "scaled_grad");
        layer.set("from", from());
        layer.set("scale", *n.attrs.get<double>("scale"));
        break;
      case ir::NodeKind::kLstm:
        layer.set("class", "rec");
        layer.set("from", ref(0));
        layer.set("unit", "nativelstm2");
        layer.set("out_dim", dim_ref(t, *n.attrs.get<ir::Dim>("out_dim")));
        layer.set("axis", dim_ref(t, *n.attrs.get<ir::Dim>("axis")));
        if (*n.attrs.get<int64_t>("direction") == -1) layer.set("direction", -1);
        layer.set("reuse_params", reuse_params({{"W", ref(1)}, {"W_re", ref(2)}, {"b", ref(3)}}));
        break;
      case ir::NodeKind::kCrossEntropy: {
        // RETURNN's "ce" loss on a softmax activation layer: it uses the
        // logits for a stable loss and reports the frame error rate.
        const ir::Node& targets = g.node(n.inputs[1]);
        if (absl::Status s = check_loss(n, targets, "targets"); !s.ok()) return s;
        const ir::TensorType& logits = g.node(n.inputs[0]).type;
        for (const ir::Dim& d : logits.dims) {
          if (d.is_feature_like() && d != *targets.type.sparse_dim) {
            return unsupported(
                n, absl::StrCat("logits may have no feature dim besides the classes ",
                                targets.type.sparse_dim->describe(), ", got ", d.describe()));
          }
        }
        layer.set("class", "activation");
        layer.set("from", ref(0));
        layer.set("activation", "softmax");
        layer.set("loss", "ce");
        layer.set("target", *targets.attrs.get<std::string>("key"));
        PyValue opts = PyValue::dict();
        if (const double* e = n.attrs.get<double>("label_smoothing"))
          opts.set("label_smoothing", *e);
        set_loss_options(layer, n, std::move(opts));
        break;
      }
      case ir::NodeKind::kCtcLoss: {
        // RETURNN's "ctc" loss on a softmax layer (blank last).
        const ir::Node& targets = g.node(n.inputs[1]);
        if (absl::Status s = check_loss(n, targets, "targets"); !s.ok()) return s;
        layer.set("class", "activation");
        layer.set("from", ref(0));
        layer.set("activation", "softmax");
        layer.set("loss", "ctc");
        layer.set("target", *targets.attrs.get<std::string>("key"));
        // A sequence whose labels cannot align with its frames adds 0 (and
        // no gradient) instead of stopping training with an infinite loss.
        set_loss_options(
            layer, n,
            PyValue::dict(
                {{"ctc_opts", PyValue::dict({{"ignore_longer_outputs_than_inputs", true}})}}));
        break;
      }
      case ir::NodeKind::kLoopState:
        continue;  // read as prev:<next value>; its initial value is there
      case ir::NodeKind::kLoopUnstack:
        layer.set("class", "rec_unstack");
        layer.set("from", ref(0));
        layer.set("axis", dim_ref(t, *n.attrs.get<ir::Dim>("axis")));
        break;
      case ir::NodeKind::kLoopNext: {
        const ir::Node& state = g.node(n.inputs[0]);
        layer.set("class", "copy");
        layer.set("from", ref(1));
        layer.set("initial_output", "base:" + g.node(state.inputs[0]).name);
        break;
      }
      case ir::NodeKind::kLoopStack:
        layer.set("class", "copy");
        layer.set("from", ref(0));
        break;
      case ir::NodeKind::kTrainFlag:
        layer.set("class", "train_flag");
        break;
      case ir::NodeKind::kRange: {
        const ir::Dim& dim = *n.attrs.get<ir::Dim>("dim");
        if (dim.is_dynamic()) {
          layer.set("class", "range_in_axis");
          layer.set("from", ref(0));
          layer.set("axis", dim_ref(t, dim));
        } else {
          layer.set("class", "range");
          layer.set("limit", *dim.size());
          layer.set("out_spatial_dim", dim_ref(t, dim));
          layer.set("dtype", "int32");
          layer.set("sparse", true);
        }
        break;
      }
      case ir::NodeKind::kCompare:
        layer.set("class", "compare");
        layer.set("from", from());
        layer.set("kind", *n.attrs.get<std::string>("op"));
        layer.set("allow_broadcast_all_sources", true);
        break;
      case ir::NodeKind::kCast:
        layer.set("class", "cast");
        layer.set("from", ref(0));
        layer.set("dtype", *n.attrs.get<std::string>("dtype"));
        break;
      case ir::NodeKind::kWhere:
        layer.set("class", "switch");
        layer.set("condition", ref(0));
        layer.set("true_from", ref(1));
        layer.set("false_from", ref(2));
        break;
      case ir::NodeKind::kCustomLoss: {
        // RETURNN's "as_is" loss: the value summed over frames (and over
        // any other dims), like a loss layer's per-frame value.
        if (!is_loss[i]) return unsupported(n, "the result must be marked as a loss");
        layer.set("class", "copy");
        layer.set("from", ref(0));
        layer.set("loss", "as_is");
        PyValue opts = PyValue::dict();
        if (const bool* e = n.attrs.get<bool>("as_error"); e && *e) opts.set("as_error", true);
        set_loss_options(layer, n, std::move(opts));
        break;
      }
      case ir::NodeKind::kRegressionLoss: {
        const ir::Node& target = g.node(n.inputs[1]);
        if (absl::Status s = check_loss(n, target, "the target"); !s.ok()) return s;
        layer.set("class", "copy");
        layer.set("from", ref(0));
        layer.set("loss", *n.attrs.get<std::string>("mode"));
        layer.set("target", *target.attrs.get<std::string>("key"));
        set_loss_options(layer, n, PyValue::dict());
        break;
      }
    }
    if (is_output[i] && n.name != "output") layer.set("is_output_layer", true);
    if (in_loop >= 0) {
      if (stacked[i]) layer.set("is_output_layer", true);
      loops[in_loop].unit.append(n.name, std::move(layer));
      continue;
    }
    out.network.append(n.name, std::move(layer));  // names are unique (naming pass)
  }
  for (LoopOut& l : loops) {
    if (l.name.empty()) continue;
    l.unit.append("output", PyValue::dict({{"class", "copy"}, {"from", l.output}}));
    out.network.append(l.name, PyValue::dict({{"class", "rec"},
                                              {"from", PyValue::list({})},
                                              {"axis", dim_ref(t, *l.axis)},
                                              {"unit", std::move(l.unit)}}));
  }
  out.decouple_weight_decay = decoupled.value_or(false);
  return out;
}

}  // namespace retc::emit
