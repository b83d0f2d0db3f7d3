#include "emit/torch/lower.h"

#include <algorithm>
#include <initializer_list>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "emit/config.h"
#include "emit/torch/legalize.h"
#include "emit/torch/loops.h"
#include "ir/format.h"

namespace retc::emit::torch {

std::string Lowering::dtype() const {
  return PyValue(std::string(dtype_name(n.type.dtype))).repr();
}

namespace {

std::string ints(const std::vector<int64_t>& v) {
  return PyValue::list(std::vector<PyValue>(v.begin(), v.end())).repr();
}

// The elementwise binary ops: RETURNN's combine kinds (emit/config.h).
std::string lower_binary(const Lowering& l) {
  return absl::StrCat("rf.combine(", l.in(0), ", ",
                      PyValue(std::string(combine_kind(*ir::binary_op(l.n.kind)))).repr(), ", ",
                      l.in(1), ", allow_broadcast_all_sources=True)");
}

// One lowering per kind; a kind without one is a use of this deleted
// template, an error at the dispatch below.
template <ir::NodeKind K>
std::string lower(const Lowering& l) = delete;
#define RETC_LOWER(K) \
  template <>         \
  std::string lower<ir::NodeKind::K>(const Lowering& l)

RETC_LOWER(kData) {
  return absl::StrCat("extern_data[", PyValue(l.n.attrs.get<ir::attr::Key>()).repr(), "]");
}

std::string param_ref(const Lowering& l, const ir::Node& param) {
  return absl::StrCat("_param(", l.model, ", ", PyValue(l.g.param(param.param).path).repr(), ")");
}

// Whether an assignment writes the param that `n` reads.
bool assigned(const ir::Graph& g, const ir::Node& n) {
  for (const ir::Node& u : g.nodes()) {
    if (u.kind == ir::NodeKind::kParamAssign && &g.node(u.inputs[0]) == &n) return true;
  }
  return false;
}

RETC_LOWER(kParam) {
  // A param the step assigns is read as a copy: the assignment after the
  // step's code changes neither what it computed nor what backward reads.
  if (assigned(l.g, l.n)) return absl::StrCat("_read(", param_ref(l, l.n), ")");
  return param_ref(l, l.n);
}

RETC_LOWER(kParamAssign) {
  // loops.cc writes it after the step's other code, in training only.
  return absl::StrCat("_assign(", param_ref(l, l.g.node(l.n.inputs[0])), ", ", l.in(1),
                      ", op=", PyValue(l.n.attrs.get<ir::attr::Mode>()).repr(), ")");
}

RETC_LOWER(kDot) {
  // As TF's dot layer: over a dynamic dim, the frames past a sequence's end count 0.
  std::vector<ir::Dim> dynamic;
  for (const ir::Dim& d : l.n.attrs.get<ir::attr::Reduce>()) {
    if (d.is_dynamic()) dynamic.push_back(d);
  }
  if (dynamic.empty())
    return absl::StrCat("rf.matmul(", l.in(0), ", ", l.in(1),
                        ", reduce=", l.a.dims<ir::attr::Reduce>(), ")");
  return absl::StrCat("rf.matmul(", l.in(0),
                      ".copy_masked(0.0, dims=", dims_value(l.t, dynamic).repr(), "), ", l.in(1),
                      ", reduce=", l.a.dims<ir::attr::Reduce>(), ", use_mask=False)");
}

RETC_LOWER(kActivation) {
  return absl::StrCat(rf_activation(l.n.attrs.get<ir::attr::Func>()), "(", l.in(0), ")");
}

RETC_LOWER(kDropout) {
  return absl::StrCat("rf.dropout(", l.in(0), ", ", l.a.num<ir::attr::Rate>(),
                      ", axis=", l.a.dims<ir::attr::Axes>(), ")");
}

RETC_LOWER(kLstm) {
  return absl::StrCat(
      "_lstm(", l.in(0), ", ", l.in(1), ", ", l.in(2), ", ", l.in(3),
      ", axis=", l.a.dim<ir::attr::Axis>(), ", out_dim=", l.a.dim<ir::attr::OutDim>(),
      ", backward=", l.n.attrs.get<ir::attr::Direction>() == -1 ? "True" : "False",
      l.n.inputs.size() == 6 ? absl::StrCat(", initial=(", l.in(4), ", ", l.in(5), ")") : "",
      has_final_state_reader(l.g, l.n) ? ", with_state=True" : "", ")");
}

// step_code writes the if statement
RETC_LOWER(kCond) { return l.in(1); }

RETC_LOWER(kLstmFinal) {
  return absl::StrCat("_state_", l.in(0), "[", l.n.attrs.get<ir::attr::State>() == "h" ? 0 : 1,
                      "]");
}

RETC_LOWER(kRandom) { return absl::StrCat("_random(", random_args(l.g, l.t, l.n), ")"); }

RETC_LOWER(kFreshRandom) {
  // rf's random numbers from torch's generator, which RETURNN's engine
  // seeds from random_seed (and the epoch) and which advances per draw.
  if (l.n.attrs.get<ir::attr::Distribution>() == "uniform") {
    return absl::StrCat("rf.random_uniform(", l.a.dims<ir::attr::Shape>(),
                        ", minval=", l.a.num<ir::attr::Minval>(),
                        ", maxval=", l.a.num<ir::attr::Maxval>(), ", dtype=", l.dtype(), ")");
  }
  return absl::StrCat("rf.random_normal(", l.a.dims<ir::attr::Shape>(),
                      ", mean=", l.a.num<ir::attr::Mean>(),
                      ", stddev=", l.a.num<ir::attr::Stddev>(), ", dtype=", l.dtype(), ")");
}

RETC_LOWER(kTrainStep) { return "rf.cast(rf.get_run_ctx().get_step_tensor(), \"int64\")"; }

RETC_LOWER(kConstant) {
  return absl::StrCat("rf.full(dims=", l.a.dims<ir::attr::Shape>(),
                      ", fill_value=", l.a.num<ir::attr::Value>(), ", dtype=", l.dtype(), ")");
}

RETC_LOWER(kNorm) {
  return absl::StrCat("_norm(", l.in(0), ", axis=", l.a.dims<ir::attr::Axes>(), ")");
}

RETC_LOWER(kWeightDropout) {
  return absl::StrCat("_weight_dropout(", l.in(0), ", ", l.a.num<ir::attr::Rate>(), ")");
}

RETC_LOWER(kWeightNoise) {
  return absl::StrCat("_weight_noise(", l.in(0), ", ", l.a.num<ir::attr::Stddev>(), ")");
}

RETC_LOWER(kReduce) {
  const std::string& mode = l.n.attrs.get<ir::attr::Mode>();
  const auto& axes = l.n.attrs.get<ir::attr::Axes>();
  if (mode == "argmax" || mode == "argmin")
    return absl::StrCat("rf.reduce_", mode, "(", l.in(0), ", axis=", l.t.id(axes[0]), ")");
  if (mode == "logsumexp")
    return absl::StrCat("rf.reduce_logsumexp(", l.in(0), ", axis=", l.a.dims<ir::attr::Axes>(),
                        ")");
  return absl::StrCat("rf.reduce(", l.in(0), ", mode=", PyValue(mode).repr(),
                      ", axis=", l.a.dims<ir::attr::Axes>(), ")");
}

RETC_LOWER(kSoftmax) {
  return absl::StrCat(l.n.attrs.get<ir::attr::Log>() ? "rf.log_softmax(" : "rf.softmax(", l.in(0),
                      ", axis=", l.a.dim<ir::attr::Axis>(), ")");
}

RETC_LOWER(kCompare) {
  return absl::StrCat("rf.compare(", l.in(0), ", ", PyValue(l.n.attrs.get<ir::attr::Op>()).repr(),
                      ", ", l.in(1), ", allow_broadcast_all_sources=True)");
}

// Where rf.cast leaves another sparse dim than the IR's type has: set it.
RETC_LOWER(kCast) {
  std::string cast = absl::StrCat("rf.cast(", l.in(0), ", ",
                                  PyValue(l.n.attrs.get<ir::attr::DType>()).repr(), ")");
  const std::optional<ir::Dim>& out = l.n.type.sparse_dim;
  if (returnn_cast_sparse_dim(l.g.node(l.n.inputs[0]).type, l.n.type) == out) return cast;
  return absl::StrCat("rf.set_sparse_dim(", cast, ", ", out ? l.t.id(*out) : "None", ")");
}

RETC_LOWER(kWhere) {
  return absl::StrCat("rf.where(", l.in(0), ", ", l.in(1), ", ", l.in(2),
                      ", allow_broadcast_all_sources=True)");
}

RETC_LOWER(kConcat) {
  return absl::StrCat("rf.concat((", l.in(0), ", ", l.a.dim<ir::attr::AxisA>(), "), (", l.in(1),
                      ", ", l.a.dim<ir::attr::AxisB>(), "), out_dim=", l.a.dim<ir::attr::OutDim>(),
                      ", allow_broadcast=True)[0]");
}

RETC_LOWER(kGather) {
  return absl::StrCat("rf.gather(", l.in(0), ", indices=", l.in(1),
                      ", axis=", l.a.dim<ir::attr::Axis>(), ")");
}

RETC_LOWER(kNormalize) {
  return absl::StrCat("_normalize(", l.in(0), ", axis=", l.a.dims<ir::attr::Axes>(),
                      ", epsilon=", l.a.num<ir::attr::Epsilon>(), ")");
}

RETC_LOWER(kScaleGrad) {
  return l.n.attrs.get<ir::attr::Scale>() == 0.0
             ? absl::StrCat("rf.stop_gradient(", l.in(0), ")")
             : absl::StrCat("rf.scaled_gradient(", l.in(0), ", ", l.a.num<ir::attr::Scale>(), ")");
}

RETC_LOWER(kSplitDims) {
  return absl::StrCat("rf.split_dims(", l.in(0), ", axis=", l.a.dim<ir::attr::Axis>(),
                      ", dims=", l.a.dims<ir::attr::DimsAttr>(), ")");
}

RETC_LOWER(kMergeDims) {
  return absl::StrCat("rf.merge_dims(", l.in(0), ", dims=", l.a.dims<ir::attr::Axes>(),
                      ", out_dim=", l.a.dim<ir::attr::OutDim>(), ")[0]");
}

RETC_LOWER(kSlice) {
  return absl::StrCat("rf.slice(", l.in(0), ", axis=", l.a.dim<ir::attr::Axis>(),
                      ", start=", l.n.attrs.get<ir::attr::Start>(),
                      ", size=", l.a.dim<ir::attr::OutDim>(), ")[0]");
}

RETC_LOWER(kRepeat) {
  return absl::StrCat("_repeat(", l.in(0), ", ", l.in(1), ", axis=", l.a.dim<ir::attr::Axis>(),
                      ", out_dim=", l.a.dim<ir::attr::OutDim>(), ")");
}

RETC_LOWER(kMaskedSelect) {
  return absl::StrCat("_masked_select(", l.in(0), ", ", l.in(1),
                      ", axis=", l.a.dim<ir::attr::Axis>(),
                      ", out_dim=", l.a.dim<ir::attr::OutDim>(), ")");
}

RETC_LOWER(kSeqMask) {
  return absl::StrCat("rf.where(rf.sequence_mask(", l.a.dim<ir::attr::Axis>(), "), ", l.in(0), ", ",
                      l.a.num<ir::attr::Value>(), ", allow_broadcast_all_sources=True)");
}

RETC_LOWER(kTrainFlag) { return "rf.convert_to_tensor(rf.get_run_ctx().train_flag)"; }

RETC_LOWER(kCrossEntropy) {
  const std::string axis = l.t.id(*l.g.node(l.n.inputs[1]).type.sparse_dim);
  std::string ce;
  if (const double* e = l.n.attrs.find<ir::attr::LabelSmoothing>(); e && *e != 0.0) {
    ce = absl::StrCat("_label_smoothed_ce(", l.in(0), ", ", l.in(1), ", axis=", axis,
                      ", label_smoothing=", PyValue(*e).repr(), ")");
  } else {
    ce = absl::StrCat("rf.cross_entropy(estimated=", l.in(0),
                      ", estimated_type=\"logits\", target=", l.in(1), ", axis=", axis, ")");
  }
  if (const double* f = l.n.attrs.find<ir::attr::FocalLossFactor>(); f && *f != 0.0)
    return absl::StrCat("_focal(", ce, ", ", l.in(0), ", ", l.in(1), ", axis=", axis,
                        ", factor=", PyValue(*f).repr(), ")");
  return ce;
}

RETC_LOWER(kSelfAttention) {
  const ir::Node& qkv = l.g.node(l.n.inputs[1]);
  return absl::StrCat(
      "_self_attention(", l.in(0), ", ", l.in(1), ", ", l.n.inputs.size() == 3 ? l.in(2) : "None",
      ", axis=", l.a.dim<ir::attr::Axis>(), ", in_dim=", l.t.id(qkv.type.dims[0]),
      ", key_dim=", l.a.dim<ir::attr::KeyDim>(), ", out_dim=", l.a.dim<ir::attr::OutDim>(),
      ", num_heads=", l.n.attrs.get<ir::attr::NumHeads>(),
      ", causal=", l.n.attrs.get<ir::attr::Causal>() ? "True" : "False",
      l.n.inputs.size() == 3 ? absl::StrCat(", clipping=", l.n.attrs.get<ir::attr::Clipping>())
                             : "",
      l.n.attrs.find<ir::attr::AttDropout>()
          ? absl::StrCat(", att_dropout=", PyValue(l.n.attrs.get<ir::attr::AttDropout>()).repr())
          : "",
      ")");
}

RETC_LOWER(kConv) {
  const ir::Node& w = l.g.node(l.n.inputs[1]);
  const auto& axes = l.n.attrs.get<ir::attr::Axes>();
  const int64_t groups = l.n.attrs.get<ir::attr::Groups>();
  const ir::Dim& w_in = w.type.dims[axes.size()];
  std::vector<ir::Dim> kernel(w.type.dims.begin(), w.type.dims.begin() + axes.size());
  return absl::StrCat("_conv(", l.in(0), ", ", l.in(1), ", ", l.in(2),
                      ", in_dim=", l.t.id(groups == 1 ? w_in : w_in.operands()[0]),
                      ", out_dim=", weight_dim_id(l.t, w.type.dims, w.type.dims.size() - 1),
                      ", axes=", l.a.dims<ir::attr::Axes>(),
                      ", out_axes=", l.a.dims<ir::attr::OutAxes>(),
                      ", kernel=", dims_value(l.t, kernel).repr(),
                      ", strides=", ints(l.n.attrs.get<ir::attr::Strides>()),
                      ", dilation=", l.n.attrs.get<ir::attr::Dilation>(), ", groups=", groups,
                      ", padding=", PyValue(l.n.attrs.get<ir::attr::Padding>()).repr(), ")");
}

RETC_LOWER(kTransposedConv) {
  const ir::Node& w = l.g.node(l.n.inputs[1]);
  const size_t axes = l.n.attrs.find<ir::attr::Axes>()->size();
  std::vector<ir::Dim> kernel(w.type.dims.begin(), w.type.dims.begin() + axes);
  return absl::StrCat(
      "_transposed_conv(",
      // A square filter's in dim is its second occurrence: x's is renamed.
      w.type.dims[axes] == w.type.dims[axes + 1]
          ? absl::StrCat("rf.replace_dim_v2(", l.in(0), ", in_dim=", l.t.id(w.type.dims[axes]),
                         ", out_dim=", weight_dim_id(l.t, w.type.dims, axes + 1), ")")
          : l.in(0),
      ", ", l.in(1), ", ", l.n.inputs.size() == 3 ? l.in(2) : "None",
      ", in_dim=", weight_dim_id(l.t, w.type.dims, axes + 1),
      ", out_dim=", l.t.id(w.type.dims[axes]), ", axes=", l.a.dims<ir::attr::Axes>(),
      ", out_axes=", l.a.dims<ir::attr::OutAxes>(), ", kernel=", dims_value(l.t, kernel).repr(),
      ", strides=", ints(l.n.attrs.get<ir::attr::Strides>()), ")");
}

RETC_LOWER(kStack) {
  std::vector<std::string> xs;
  for (size_t k = 0; k < l.n.inputs.size(); ++k) xs.push_back(l.in(k));
  return absl::StrCat("rf.stack([", absl::StrJoin(xs, ", "),
                      "], out_dim=", l.a.dim<ir::attr::OutDim>(), ")[0]");
}

RETC_LOWER(kWindow) {
  const int64_t w = *l.n.attrs.get<ir::attr::WindowDim>().size();
  const bool same = l.n.attrs.get<ir::attr::Padding>() == "same";
  return absl::StrCat("_window(", l.in(0), ", axis=", l.a.dim<ir::attr::Axis>(),
                      ", window_dim=", l.a.dim<ir::attr::WindowDim>(),
                      ", out_axis=", l.a.dim<ir::attr::OutAxis>(),
                      ", stride=", l.n.attrs.get<ir::attr::Stride>(),
                      ", padding=", PyValue(l.n.attrs.get<ir::attr::Padding>()).repr(),
                      same ? absl::StrCat(", window_left=", (w - 1) / 2) : "", ")");
}

// legalize rejected it
RETC_LOWER(kRawLayer) { return "None"; }

RETC_LOWER(kLogicalNot) { return absl::StrCat("rf.logical_not(", l.in(0), ")"); }

RETC_LOWER(kCumsum) {
  return absl::StrCat("rf.cumsum(", l.in(0), ", spatial_dim=", l.a.dim<ir::attr::Axis>(), ")");
}

RETC_LOWER(kLogCumsumExp) {
  return absl::StrCat("_log_cumsum_exp(", l.in(0), ", axis=", l.a.dim<ir::attr::Axis>(), ")");
}

RETC_LOWER(kRangeOfLengths) {
  return absl::StrCat("_range_of_lengths(", l.in(0), ", out_dim=", l.a.dim<ir::attr::OutDim>(),
                      ")");
}

RETC_LOWER(kScatter) {
  return absl::StrCat("_scatter(", l.in(0), ", ", l.in(1), ", axis=", l.a.dim<ir::attr::Axis>(),
                      ", mode=", emit::PyValue(l.n.attrs.get<ir::attr::Mode>()).repr(),
                      ", fill=", l.a.num<ir::attr::Value>(), ")");
}

RETC_LOWER(kEditDistance) {
  return absl::StrCat("rf.edit_distance(", l.in(0), ", ", l.a.dim<ir::attr::AxisA>(), ", ", l.in(1),
                      ", ", l.a.dim<ir::attr::AxisB>(), ")");
}

RETC_LOWER(kTopK) {
  return absl::StrCat("rf.top_k(", l.in(0), ", axis=", l.a.dim<ir::attr::Axis>(),
                      ", k=", *l.n.attrs.get<ir::attr::KDim>().size(),
                      ", k_dim=", l.a.dim<ir::attr::KDim>(), ")[",
                      l.n.attrs.get<ir::attr::Indices>() ? 1 : 0, "]");
}

RETC_LOWER(kPad) {
  return absl::StrCat("_pad(", l.in(0), ", axis=", l.a.dim<ir::attr::Axis>(),
                      ", left=", l.n.attrs.get<ir::attr::Left>(),
                      ", right=", l.n.attrs.get<ir::attr::Right>(), ", value=",
                      l.n.type.sparse_dim
                          ? absl::StrCat(static_cast<int64_t>(l.n.attrs.get<ir::attr::Value>()))
                          : l.a.num<ir::attr::Value>(),
                      ", out_dim=", l.a.dim<ir::attr::OutDim>(), ")");
}

RETC_LOWER(kReplaceDim) {
  if (l.n.inputs.size() == 1 && l.n.attrs.find<ir::attr::Axis>()->is_dynamic())
    return absl::StrCat("_copy_dim(", l.in(0), ", in_dim=", l.a.dim<ir::attr::Axis>(),
                        ", out_dim=", l.a.dim<ir::attr::OutDim>(), ")");
  return absl::StrCat("rf.replace_dim_v2(", l.in(0), ", in_dim=", l.a.dim<ir::attr::Axis>(),
                      ", out_dim=", l.a.dim<ir::attr::OutDim>(), ")");
}

RETC_LOWER(kPool) {
  return absl::StrCat("_pool(", l.in(0), ", mode=", PyValue(l.n.attrs.get<ir::attr::Mode>()).repr(),
                      ", size=", ints(l.n.attrs.get<ir::attr::Size>()),
                      ", strides=", ints(l.n.attrs.get<ir::attr::Strides>()),
                      ", padding=", PyValue(l.n.attrs.get<ir::attr::Padding>()).repr(),
                      ", axes=", l.a.dims<ir::attr::Axes>(),
                      ", out_axes=", l.a.dims<ir::attr::OutAxes>(), ")");
}

RETC_LOWER(kBatchNorm) {
  return absl::StrCat("_batch_norm(", l.in(0), ", ", l.in(1), ", ", l.in(2), ", ", l.in(3), ", ",
                      l.in(4), ", axis=", l.a.dim<ir::attr::Axis>(),
                      ", epsilon=", l.a.num<ir::attr::Epsilon>(),
                      ", momentum=", l.a.num<ir::attr::Momentum>(),
                      l.n.attrs.get<ir::attr::Unmasked>() ? ", masked=False" : "", ")");
}

RETC_LOWER(kCtcLoss) {
  const ir::Node& targets = l.g.node(l.n.inputs[1]);
  return absl::StrCat("_ctc_loss(", l.in(0), ", ", l.in(1), ", axis=", l.a.dim<ir::attr::Axis>(),
                      ", targets_axis=", l.t.id(targets_axis(targets.type)),
                      ", classes=", l.t.id(class_dim(l.g, l.n)), ")");
}

RETC_LOWER(kShiftAxis) {
  const double* pad = l.n.attrs.find<ir::attr::PadValue>();
  std::string pad_value = "0.0";
  if (l.n.type.sparse_dim) {
    pad_value = absl::StrCat(pad ? static_cast<int64_t>(*pad) : 0);
  } else if (pad) {
    pad_value = PyValue(*pad).repr();
  }
  return absl::StrCat("_shift(", l.in(0), ", axis=", l.a.dim<ir::attr::Axis>(),
                      ", amount=", l.n.attrs.get<ir::attr::Amount>(), ", pad_value=", pad_value,
                      ")");
}

RETC_LOWER(kPosEncoding) {
  if (const int64_t* loop = l.n.attrs.find<ir::attr::Loop>())
    return absl::StrCat("_pos_encoding_at(", l.in(0), ", _t", *loop,
                        ", feature_dim=", l.t.id(feature_dim(l.n.type)), ")");
  return absl::StrCat("_pos_encoding(", l.in(0), ", axis=", l.a.dim<ir::attr::Axis>(),
                      ", feature_dim=", l.t.id(feature_dim(l.n.type)), ")");
}

RETC_LOWER(kRange) {
  return absl::StrCat("rf.range_over_dim(", l.a.dim<ir::attr::DimAttr>(), ", dtype=\"int32\")");
}

RETC_LOWER(kRegressionLoss) {
  std::vector<ir::Dim> features;
  for (const ir::Dim& d : l.g.node(l.n.inputs[0]).type.dims) {
    if (d.is_feature_like()) features.push_back(d);
  }
  std::string diff = absl::StrCat(l.in(0), " - ", l.in(1));
  std::string per_entry = l.n.attrs.get<ir::attr::Mode>() == "mse"
                              ? absl::StrCat("rf.square(", diff, ")")
                              : absl::StrCat("rf.abs(", diff, ")");
  if (features.empty()) return per_entry;
  return absl::StrCat("rf.reduce_sum(", per_entry, ", axis=", dims_value(l.t, features).repr(),
                      ")");
}

RETC_LOWER(kCustomLoss) { return l.in(0); }

// Loops (see emit_loop): a frame of the input, the state's initial value
// (before the loop), the state's next value, the frames stacked.
RETC_LOWER(kLoopUnstack) {
  return absl::StrCat("rf.gather(", l.in(0), ", axis=", l.a.dim<ir::attr::Axis>(), ", indices=_t",
                      l.n.attrs.get<ir::attr::Loop>(), ")");
}

RETC_LOWER(kLoopState) { return l.in(0); }

RETC_LOWER(kLoopNext) { return l.in(1); }

RETC_LOWER(kLoopStack) {
  // Over a new axis: the search picks the best hypothesis and gives the axis its lengths.
  // Over an existing axis with a choice: the best hypothesis, the axis's own lengths.
  const int64_t loop = l.n.attrs.get<ir::attr::Loop>();
  for (const ir::Node& e : l.g.nodes()) {
    if (e.kind == ir::NodeKind::kLoopEnd && e.attrs.get<ir::attr::Loop>() == loop)
      return absl::StrCat("_search", loop, ".stack(_frames_of_", l.in(0),
                          ", axis=", l.a.dim<ir::attr::Axis>(), ")");
  }
  for (const ir::Node& e : l.g.nodes()) {
    if (e.kind == ir::NodeKind::kChoice && e.attrs.get<ir::attr::Loop>() == loop)
      return absl::StrCat("_search", loop, ".stack(_frames_of_", l.in(0),
                          ", axis=", l.a.dim<ir::attr::Axis>(), ", keep_lengths=True)");
  }
  return absl::StrCat("rf.stack(_frames_of_", l.in(0), ", out_dim=", l.a.dim<ir::attr::Axis>(),
                      ")[0]");
}

RETC_LOWER(kLength) {
  return absl::StrCat("_length(", l.in(0), ", ", l.a.dim<ir::attr::Axis>(), ")");
}

// emit_loop ends the sequences
RETC_LOWER(kLoopEnd) { return l.in(0); }

RETC_LOWER(kChoice) {
  return absl::StrCat("_search", l.n.attrs.get<ir::attr::Loop>(), ".choose(", l.in(0), ", ",
                      l.a.dim<ir::attr::DimAttr>(), ")");
}

RETC_LOWER(kCumConcat) {
  const int64_t loop = l.n.attrs.get<ir::attr::Loop>();
  return absl::StrCat("_cum_concat(", l.in(0), ", _acc_", l.n.name,
                      ", out_dim=", l.a.dim<ir::attr::OutDim>(), ", t=_t", loop, ")");
}

RETC_LOWER(kWeightNorm) {
  return "";  // torch-legalize rejected it
}

#undef RETC_LOWER

std::string expression(const Lowering& l) {
  switch (l.n.kind) {
#define RETC_X(E, S, F, ...) \
  case ir::NodeKind::k##E:   \
    return lower_binary(l);
    RETC_FOR_EACH_BINARY_KIND(RETC_X)
#undef RETC_X
#define RETC_X(E, S, F, ...) \
  case ir::NodeKind::k##E:   \
    return lower<ir::NodeKind::k##E>(l);
    RETC_FOR_EACH_NONBINARY_KIND(RETC_X)
#undef RETC_X
  }
  return "";
}

}  // namespace

bool reads_data(const ir::Graph& g, const ir::Node& n) {
  for (const ir::Node& m : g.nodes()) {
    const int target = ir::kind_facts(m.kind).target_input;
    for (int i = 0; i < static_cast<int>(m.inputs.size()); ++i) {
      if (i != target && &g.node(m.inputs[i]) == &n) return true;
    }
  }
  for (const ir::Mark& m : g.marks()) {
    if (&g.node(m.node) == &n) return true;
  }
  return false;
}

std::string random_args(const ir::Graph& g, const ir::DimTable& t, const ir::Node& n) {
  const Lowering l{g, t, n, "self", AttrText{t, n}};
  const std::string& dist = n.attrs.get<ir::attr::Distribution>();
  const bool uniform = dist == "uniform";
  return absl::StrCat(PyValue(dist).repr(), ", ", l.a.dims<ir::attr::Shape>(), ", ",
                      uniform ? l.a.num<ir::attr::Minval>() : l.a.num<ir::attr::Mean>(), ", ",
                      uniform ? l.a.num<ir::attr::Maxval>() : l.a.num<ir::attr::Stddev>(), ", ",
                      n.attrs.get<ir::attr::Seed>(), ", ", l.dtype());
}

namespace {

// Input k of binary node `n` when its kind is `kind`, the other input in `other`.
const ir::Node* operand(const ir::Graph& g, const ir::Node& n, ir::NodeKind kind, int k,
                        ir::NodeId& other) {
  const ir::Node& in = g.node(n.inputs[k]);
  if (in.kind != kind) return nullptr;
  other = n.inputs[1 - k];
  return &in;
}

bool same_set(const std::vector<ir::Dim>& a, const std::vector<ir::Dim>& b) {
  return a.size() == b.size() &&
         std::all_of(a.begin(), a.end(), [&](const ir::Dim& d) { return ir::index_of(b, d) >= 0; });
}

// `e`, the value of `n` from `inputs`, renamed back to the IR's dims where an
// input has a dim twice and `n` each once (as value_of).
std::string unprimed(const ir::Graph& g, const ir::Node& n,
                     std::initializer_list<ir::NodeId> inputs, std::string e) {
  if (has_repeated_dim(n.type.dims) ||
      std::none_of(inputs.begin(), inputs.end(),
                   [&](ir::NodeId in) { return has_repeated_dim(g.node(in).type.dims); }))
    return e;
  return absl::StrCat("_unprime(", e, ")");
}

std::optional<Fusion> weight_norm_dot(const ir::Graph& g, const ir::DimTable& t,
                                      const ir::Node& mul) {
  for (int k = 0; k < 2; ++k) {
    ir::NodeId div_id;
    const ir::Node* dot = operand(g, mul, ir::NodeKind::kDot, k, div_id);
    const ir::Node& div = g.node(div_id);
    if (!dot || div.kind != ir::NodeKind::kDiv) continue;
    const ir::Node& norm = g.node(div.inputs[1]);
    if (norm.kind != ir::NodeKind::kNorm) continue;
    const ir::NodeId v = norm.inputs[0];
    const int at = dot->inputs[0] == v ? 0 : dot->inputs[1] == v ? 1 : -1;
    if (at < 0 || dot->inputs[1 - at] == v) continue;
    const auto& axes = norm.attrs.get<ir::attr::Axes>();
    const auto& reduce = dot->attrs.get<ir::attr::Reduce>();
    if (!same_set(axes, reduce)) continue;
    const ir::NodeId x = dot->inputs[1 - at], scale = div.inputs[0];
    std::string e = absl::StrCat("_weight_norm_dot(", g.node(x).name, ", ", g.node(v).name, ", ",
                                 g.node(scale).name, ", axis=", dims_value(t, axes).repr(),
                                 ", reduce=", dims_value(t, reduce).repr(), ")");
    return Fusion{{mul.inputs[k], div_id, div.inputs[1]},
                  unprimed(g, mul, {x, v, scale}, std::move(e))};
  }
  return std::nullopt;
}

std::optional<Fusion> affine_normalize(const ir::Graph& g, const ir::DimTable& t,
                                       const ir::Node& add) {
  for (int k = 0; k < 2; ++k) {
    ir::NodeId bias, scale;
    const ir::Node* mul = operand(g, add, ir::NodeKind::kMul, k, bias);
    if (!mul) continue;
    for (int j = 0; j < 2; ++j) {
      const ir::Node* norm = operand(g, *mul, ir::NodeKind::kNormalize, j, scale);
      if (!norm) continue;
      const auto& axes = norm->attrs.get<ir::attr::Axes>();
      if (axes.size() != 1 || axes[0].is_dynamic() || g.node(scale).type.dims != axes ||
          g.node(bias).type.dims != axes)
        continue;
      return Fusion{
          {add.inputs[k], mul->inputs[j]},
          absl::StrCat("_normalize(", g.node(norm->inputs[0]).name,
                       ", axis=", dims_value(t, axes).repr(),
                       ", epsilon=", PyValue(norm->attrs.get<ir::attr::Epsilon>()).repr(),
                       ", scale=", g.node(scale).name, ", bias=", g.node(bias).name, ")")};
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<Fusion> fusion(const ir::Graph& g, const ir::DimTable& t, const ir::Node& n) {
  if (n.inputs.size() != 2) return std::nullopt;
  if (n.kind == ir::NodeKind::kMul) return weight_norm_dot(g, t, n);
  if (n.kind != ir::NodeKind::kAdd) return std::nullopt;
  return affine_normalize(g, t, n);
}

std::string value_of(const ir::Graph& g, const ir::DimTable& t, const ir::Node& n,
                     absl::string_view model) {
  std::string e = expression(Lowering{g, t, n, model, AttrText{t, n}});
  if (has_repeated_dim(n.type.dims)) return e;
  for (ir::NodeId in : n.inputs) {
    if (has_repeated_dim(g.node(in).type.dims)) return absl::StrCat("_unprime(", e, ")");
  }
  return e;
}

}  // namespace retc::emit::torch
