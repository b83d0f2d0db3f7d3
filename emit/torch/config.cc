#include "emit/torch/config.h"

#include <array>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "emit/py_value.h"
#include "emit/torch/target.h"
#include "ir/diagnostic.h"
#include "ir/dim_table.h"
#include "ir/format.h"
#include "ir/loops.h"
#include "ir/status_macros.h"

namespace retc::emit::torch {
namespace {

// The rf function of an activation; empty: not lowered.
absl::string_view rf_activation(absl::string_view func) {
  static const std::pair<absl::string_view, absl::string_view> kFuncs[] = {
      {"relu", "rf.relu"},     {"tanh", "rf.tanh"},    {"sigmoid", "rf.sigmoid"},
      {"gelu", "rf.gelu"},     {"elu", "rf.elu"},      {"swish", "rf.swish"},
      {"silu", "rf.silu"},     {"exp", "rf.exp"},      {"log", "rf.log"},
      {"abs", "rf.abs"},       {"sqrt", "rf.sqrt"},    {"rsqrt", "rf.rsqrt"},
      {"square", "rf.square"}, {"negative", "rf.neg"}, {"softplus", "_softplus"},
      {"sin", "rf.sin"},       {"cos", "rf.cos"}};
  for (const auto& [f, rf] : kFuncs) {
    if (f == func) return rf;
  }
  return "";
}

// Why this target cannot lower `n`; empty: it can. (Every kind and
// activation of the IR; weight_norm never reaches it.)
std::string not_lowered(const ir::Node& n) {
  switch (n.kind) {
#define RETC_X(E, S, F, ...) case ir::NodeKind::k##E:
    RETC_FOR_EACH_BINARY_KIND(RETC_X)
#undef RETC_X
    case ir::NodeKind::kData:
    case ir::NodeKind::kParam:
    case ir::NodeKind::kDot:
    case ir::NodeKind::kDropout:
    case ir::NodeKind::kLstm:
    case ir::NodeKind::kRandom:
    case ir::NodeKind::kFreshRandom:
    case ir::NodeKind::kConstant:
    case ir::NodeKind::kSoftmax:
    case ir::NodeKind::kCompare:
    case ir::NodeKind::kCast:
    case ir::NodeKind::kWhere:
    case ir::NodeKind::kTrainFlag:
    case ir::NodeKind::kTrainStep:
    case ir::NodeKind::kConcat:
    case ir::NodeKind::kGather:
    case ir::NodeKind::kNormalize:
    case ir::NodeKind::kScaleGrad:
    case ir::NodeKind::kSplitDims:
    case ir::NodeKind::kMergeDims:
    case ir::NodeKind::kSlice:
    case ir::NodeKind::kMaskedSelect:
    case ir::NodeKind::kRepeat:
    case ir::NodeKind::kCond:
    case ir::NodeKind::kLstmFinal:
    case ir::NodeKind::kLength:
    case ir::NodeKind::kLoopEnd:
    case ir::NodeKind::kChoice:
    case ir::NodeKind::kCumConcat:
    case ir::NodeKind::kSeqMask:
    case ir::NodeKind::kNorm:
    case ir::NodeKind::kWeightDropout:
    case ir::NodeKind::kWeightNoise:
    case ir::NodeKind::kSelfAttention:
    case ir::NodeKind::kConv:
    case ir::NodeKind::kRegressionLoss:
    case ir::NodeKind::kPool:
    case ir::NodeKind::kBatchNorm:
    case ir::NodeKind::kCtcLoss:
    case ir::NodeKind::kShiftAxis:
    case ir::NodeKind::kPosEncoding:
    case ir::NodeKind::kCustomLoss:
    case ir::NodeKind::kRange:
    case ir::NodeKind::kReduce:
    case ir::NodeKind::kCrossEntropy:
    case ir::NodeKind::kLoopUnstack:
    case ir::NodeKind::kLoopState:
    case ir::NodeKind::kLoopNext:
    case ir::NodeKind::kLoopStack:
      return "";
    case ir::NodeKind::kActivation:
      return rf_activation(n.attrs.get<ir::attr::Func>()).empty()
                 ? absl::StrCat("the activation ", ir::quote(n.attrs.get<ir::attr::Func>()))
                 : "";
    case ir::NodeKind::kReplaceDim:
    case ir::NodeKind::kLogicalNot:
    case ir::NodeKind::kReverse:
    case ir::NodeKind::kSliceAt:
    case ir::NodeKind::kInverseWindow:
    case ir::NodeKind::kCumsum:
    case ir::NodeKind::kTopK:
    case ir::NodeKind::kPad:
    case ir::NodeKind::kStack:
    case ir::NodeKind::kWindow:
      return "";
    case ir::NodeKind::kRawLayer:
      return "raw_layer (a RETURNN TF net-dict layer)";
    case ir::NodeKind::kTransposedConv:
      // RETURNN's torch frontend has no "same" padding for it.
      return n.attrs.get<ir::attr::Padding>() == "same"
                 ? "a transposed convolution with \"same\" padding"
                 : "";
    case ir::NodeKind::kWeightNorm:  // expand-parametrizations expanded it
      return absl::StrCat(node_kind_name(n.kind), " nodes");
  }
  return "this kind";
}

// Why this target cannot give `p` what it asks for; empty: it can.
std::string unsupported_option(const ir::Param& p) {
  if (!p.options.device.empty()) {
    return absl::StrCat("a device of its own (", ir::quote(p.options.device),
                        "): RETURNN's torch engine puts the whole model on one device "
                        "(the tf target can: --backend tf)");
  }
  return "";
}

PyValue dim_ref(const ir::DimTable& t, const ir::Dim& d) { return PyValue::ref(t.id(d)); }

// The one feature dim of `type` (pos_encoding's channels).
const ir::Dim& feature_dim(const ir::TensorType& type) {
  for (const ir::Dim& d : type.dims) {
    if (d.is_feature_like()) return d;
  }
  return type.dims.back();
}

// The classes-plus-blank dim of a CTC loss's logits: the one neither batch, nor the axis.
const ir::Dim& class_dim(const ir::Graph& g, const ir::Node& ctc) {
  const ir::TensorType& logits = g.node(ctc.inputs[0]).type;
  const ir::Dim& axis = ctc.attrs.get<ir::attr::Axis>();
  for (const ir::Dim& d : logits.dims) {
    if (!d.is_batch() && d != axis && d.size()) return d;
  }
  return logits.dims.back();
}

// The sequence axis of sparse targets: their dynamic dim.
const ir::Dim& targets_axis(const ir::TensorType& type) {
  for (const ir::Dim& d : type.dims) {
    if (d.is_dynamic() && !d.is_batch()) return d;
  }
  return type.dims.back();
}

// A dim that occurs again in a list (a square weight [h, h]): rf wants each
// dim once, so its k-th occurrence (k >= 2) is a dim of its own, `h_dim__k`,
// and results whose IR type has it once are renamed back (_unprime).
std::string occurrence_id(const ir::DimTable& t, const ir::Dim& d, int k) {
  return k == 1 ? t.id(d) : absl::StrCat(t.id(d), "__", k);
}

// The name of a weight's dim at position `i` as dims_value gives it (a
// square conv's out dim: its second occurrence).
std::string weight_dim_id(const ir::DimTable& t, const std::vector<ir::Dim>& dims, size_t i) {
  int k = 1;
  for (size_t j = 0; j < i; ++j) k += dims[j] == dims[i];
  return occurrence_id(t, dims[i], k);
}

bool has_repeated_dim(const std::vector<ir::Dim>& dims) {
  for (size_t i = 0; i < dims.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (dims[i] == dims[j]) return true;
    }
  }
  return false;
}

PyValue dims_value(const ir::DimTable& t, const std::vector<ir::Dim>& dims) {
  std::vector<PyValue> v;
  for (size_t i = 0; i < dims.size(); ++i) {
    int k = 1;
    for (size_t j = 0; j < i; ++j) k += dims[j] == dims[i];
    v.push_back(PyValue::ref(occurrence_id(t, dims[i], k)));
  }
  return PyValue::list(std::move(v));
}

// The Python of node `n`: its expression, renamed back to the IR's dims
// where an input had a dim twice and `n` has each once.
std::string expression(const ir::Graph& g, const ir::DimTable& t, const ir::Node& n,
                       absl::string_view model);

// Whether an lstm_final node reads the LSTM node `n`.
bool has_final_state_reader(const ir::Graph& g, const ir::Node& n) {
  if (n.kind != ir::NodeKind::kLstm) return false;
  for (const ir::Node& m : g.nodes()) {
    if (m.kind == ir::NodeKind::kLstmFinal && &g.node(m.inputs[0]) == &n) return true;
  }
  return false;
}

std::string value_of(const ir::Graph& g, const ir::DimTable& t, const ir::Node& n,
                     absl::string_view model) {
  std::string e = expression(g, t, n, model);
  if (has_repeated_dim(n.type.dims)) return e;
  for (ir::NodeId in : n.inputs) {
    if (has_repeated_dim(g.node(in).type.dims)) return absl::StrCat("_unprime(", e, ")");
  }
  return e;
}

// `time_dim = Dim(None, name="time")`, `hidden_x4_dim = 4 * hidden_dim`, ...
PyValue dim_definition(const ir::DimTable& t, const ir::Dim& d) {
  switch (d.kind()) {
    case ir::Dim::Kind::kBatch:
      return PyValue::ref("batch_dim");
    case ir::Dim::Kind::kFeature:
    case ir::Dim::Kind::kSpatial:
      return PyValue::call("Dim", {d.size() ? PyValue(*d.size()) : PyValue::none()},
                           {{"name", d.name()}});
    case ir::Dim::Kind::kDerived:
      return derived_dim_value(t, d);
  }
  return PyValue();
}

// A node attribute's value as Python: `a.dim<ir::attr::Axis>()`.
struct AttrText {
  const ir::DimTable& t;
  const ir::Node& n;
  template <ir::attr::Tag A>
  std::string dim() const {
    return t.id(n.attrs.get<A>());
  }
  template <ir::attr::Tag A>
  std::string dims() const {
    return dims_value(t, n.attrs.get<A>()).repr();
  }
  template <ir::attr::Tag A>
  std::string num() const {
    return PyValue(n.attrs.get<A>()).repr();
  }
};

// The Python expression of one node (inputs by their names).
std::string expression(const ir::Graph& g, const ir::DimTable& t, const ir::Node& n,
                       absl::string_view model) {
  auto in = [&](size_t k) { return g.node(n.inputs[k]).name; };
  const AttrText a{t, n};
  auto dtype = [&] { return PyValue(std::string(dtype_name(n.type.dtype))).repr(); };
  auto ints = [](const std::vector<int64_t>& v) {
    return PyValue::list(std::vector<PyValue>(v.begin(), v.end())).repr();
  };
  switch (n.kind) {
#define RETC_X(E, S, F, ...) case ir::NodeKind::k##E:
    RETC_FOR_EACH_BINARY_KIND(RETC_X)
#undef RETC_X
    return absl::StrCat("rf.combine(", in(0), ", ",
                        PyValue(std::string(combine_kind(*ir::binary_op(n.kind)))).repr(), ", ",
                        in(1), ", allow_broadcast_all_sources=True)");
    case ir::NodeKind::kData:
      return absl::StrCat("extern_data[", PyValue(n.attrs.get<ir::attr::Key>()).repr(), "]");
    case ir::NodeKind::kParam:
      return absl::StrCat("_param(", model, ", ", PyValue(g.param(n.param).path).repr(), ")");
    case ir::NodeKind::kDot: {
      // As TF's dot layer: over a dynamic dim, the frames past a sequence's end count 0.
      std::vector<ir::Dim> dynamic;
      for (const ir::Dim& d : n.attrs.get<ir::attr::Reduce>()) {
        if (d.is_dynamic()) dynamic.push_back(d);
      }
      if (dynamic.empty())
        return absl::StrCat("rf.matmul(", in(0), ", ", in(1),
                            ", reduce=", a.dims<ir::attr::Reduce>(), ")");
      return absl::StrCat("rf.matmul(", in(0),
                          ".copy_masked(0.0, dims=", dims_value(t, dynamic).repr(), "), ", in(1),
                          ", reduce=", a.dims<ir::attr::Reduce>(), ", use_mask=False)");
    }
    case ir::NodeKind::kActivation:
      return absl::StrCat(rf_activation(n.attrs.get<ir::attr::Func>()), "(", in(0), ")");
    case ir::NodeKind::kDropout:
      return absl::StrCat("rf.dropout(", in(0), ", ", a.num<ir::attr::Rate>(),
                          ", axis=", a.dims<ir::attr::Axes>(), ")");
    case ir::NodeKind::kLstm:
      return absl::StrCat(
          "_lstm(", in(0), ", ", in(1), ", ", in(2), ", ", in(3),
          ", axis=", a.dim<ir::attr::Axis>(), ", out_dim=", a.dim<ir::attr::OutDim>(),
          ", backward=", n.attrs.get<ir::attr::Direction>() == -1 ? "True" : "False",
          n.inputs.size() == 6 ? absl::StrCat(", initial=(", in(4), ", ", in(5), ")") : "",
          has_final_state_reader(g, n) ? ", with_state=True" : "", ")");
    case ir::NodeKind::kCond:  // step_code writes the if statement
      return in(1);
    case ir::NodeKind::kLstmFinal:
      return absl::StrCat("_state_", in(0), "[", n.attrs.get<ir::attr::State>() == "h" ? 0 : 1,
                          "]");
    case ir::NodeKind::kRandom: {
      const std::string& dist = n.attrs.get<ir::attr::Distribution>();
      const bool uniform = dist == "uniform";
      return absl::StrCat("_random(", PyValue(dist).repr(), ", ", a.dims<ir::attr::Shape>(), ", ",
                          uniform ? a.num<ir::attr::Minval>() : a.num<ir::attr::Mean>(), ", ",
                          uniform ? a.num<ir::attr::Maxval>() : a.num<ir::attr::Stddev>(), ", ",
                          n.attrs.get<ir::attr::Seed>(), ", ", dtype(), ")");
    }
    case ir::NodeKind::kFreshRandom: {
      // rf's random numbers from torch's generator, which RETURNN's engine
      // seeds from random_seed (and the epoch) and which advances per draw.
      if (n.attrs.get<ir::attr::Distribution>() == "uniform") {
        return absl::StrCat("rf.random_uniform(", a.dims<ir::attr::Shape>(),
                            ", minval=", a.num<ir::attr::Minval>(),
                            ", maxval=", a.num<ir::attr::Maxval>(), ", dtype=", dtype(), ")");
      }
      return absl::StrCat("rf.random_normal(", a.dims<ir::attr::Shape>(),
                          ", mean=", a.num<ir::attr::Mean>(),
                          ", stddev=", a.num<ir::attr::Stddev>(), ", dtype=", dtype(), ")");
    }
    case ir::NodeKind::kTrainStep:
      return "rf.cast(rf.get_run_ctx().get_step_tensor(), \"int64\")";
    case ir::NodeKind::kConstant:
      return absl::StrCat("rf.full(dims=", a.dims<ir::attr::Shape>(),
                          ", fill_value=", a.num<ir::attr::Value>(), ", dtype=", dtype(), ")");
    case ir::NodeKind::kNorm:
      return absl::StrCat("_norm(", in(0), ", axis=", a.dims<ir::attr::Axes>(), ")");
    case ir::NodeKind::kWeightDropout:
      return absl::StrCat("_weight_dropout(", in(0), ", ", a.num<ir::attr::Rate>(), ")");
    case ir::NodeKind::kWeightNoise:
      return absl::StrCat("_weight_noise(", in(0), ", ", a.num<ir::attr::Stddev>(), ")");
    case ir::NodeKind::kReduce: {
      const std::string& mode = n.attrs.get<ir::attr::Mode>();
      const auto& axes = n.attrs.get<ir::attr::Axes>();
      if (mode == "argmax" || mode == "argmin")
        return absl::StrCat("rf.reduce_", mode, "(", in(0), ", axis=", t.id(axes[0]), ")");
      if (mode == "logsumexp")
        return absl::StrCat("rf.reduce_logsumexp(", in(0), ", axis=", a.dims<ir::attr::Axes>(),
                            ")");
      return absl::StrCat("rf.reduce(", in(0), ", mode=", PyValue(mode).repr(),
                          ", axis=", a.dims<ir::attr::Axes>(), ")");
    }
    case ir::NodeKind::kSoftmax:
      return absl::StrCat(n.attrs.get<ir::attr::Log>() ? "rf.log_softmax(" : "rf.softmax(", in(0),
                          ", axis=", a.dim<ir::attr::Axis>(), ")");
    case ir::NodeKind::kCompare:
      return absl::StrCat("rf.compare(", in(0), ", ", PyValue(n.attrs.get<ir::attr::Op>()).repr(),
                          ", ", in(1), ", allow_broadcast_all_sources=True)");
    case ir::NodeKind::kCast:
      return absl::StrCat("rf.cast(", in(0), ", ", PyValue(n.attrs.get<ir::attr::DType>()).repr(),
                          ")");
    case ir::NodeKind::kWhere:
      return absl::StrCat("rf.where(", in(0), ", ", in(1), ", ", in(2),
                          ", allow_broadcast_all_sources=True)");
    case ir::NodeKind::kConcat:
      return absl::StrCat("rf.concat((", in(0), ", ", a.dim<ir::attr::AxisA>(), "), (", in(1), ", ",
                          a.dim<ir::attr::AxisB>(), "), out_dim=", a.dim<ir::attr::OutDim>(),
                          ", allow_broadcast=True)[0]");
    case ir::NodeKind::kGather:
      return absl::StrCat("rf.gather(", in(0), ", indices=", in(1),
                          ", axis=", a.dim<ir::attr::Axis>(), ")");
    case ir::NodeKind::kNormalize:
      return absl::StrCat("_normalize(", in(0), ", axis=", a.dims<ir::attr::Axes>(),
                          ", epsilon=", a.num<ir::attr::Epsilon>(), ")");
    case ir::NodeKind::kScaleGrad:
      return n.attrs.get<ir::attr::Scale>() == 0.0
                 ? absl::StrCat("rf.stop_gradient(", in(0), ")")
                 : absl::StrCat("rf.scaled_gradient(", in(0), ", ", a.num<ir::attr::Scale>(), ")");
    case ir::NodeKind::kSplitDims:
      return absl::StrCat("rf.split_dims(", in(0), ", axis=", a.dim<ir::attr::Axis>(),
                          ", dims=", a.dims<ir::attr::DimsAttr>(), ")");
    case ir::NodeKind::kMergeDims:
      return absl::StrCat("rf.merge_dims(", in(0), ", dims=", a.dims<ir::attr::Axes>(),
                          ", out_dim=", a.dim<ir::attr::OutDim>(), ")[0]");
    case ir::NodeKind::kSlice:
      return absl::StrCat("rf.slice(", in(0), ", axis=", a.dim<ir::attr::Axis>(),
                          ", start=", n.attrs.get<ir::attr::Start>(),
                          ", size=", a.dim<ir::attr::OutDim>(), ")[0]");
    case ir::NodeKind::kReverse:
      return absl::StrCat("rf.reverse_sequence(", in(0), ", axis=", a.dim<ir::attr::Axis>(), ")");
    case ir::NodeKind::kInverseWindow:
      return absl::StrCat("_inverse_window(", in(0), ", axis=", a.dim<ir::attr::Axis>(),
                          ", window_dim=", a.dim<ir::attr::WindowDim>(),
                          ", out_axis=", a.dim<ir::attr::OutAxis>(),
                          ", overlap_dim=", a.dim<ir::attr::OverlapDim>(),
                          ", stride=", n.attrs.get<ir::attr::Stride>(),
                          ", window_left=", n.attrs.get<ir::attr::WindowLeft>(), ")");
    case ir::NodeKind::kSliceAt:
      return absl::StrCat("_slice_at(", in(0), ", ", in(1), ", axis=", a.dim<ir::attr::Axis>(),
                          ", out_dim=", a.dim<ir::attr::OutDim>(), ")");
    case ir::NodeKind::kRepeat:
      return absl::StrCat("_repeat(", in(0), ", ", in(1), ", axis=", a.dim<ir::attr::Axis>(),
                          ", out_dim=", a.dim<ir::attr::OutDim>(), ")");
    case ir::NodeKind::kMaskedSelect:
      return absl::StrCat("_masked_select(", in(0), ", ", in(1), ", axis=", a.dim<ir::attr::Axis>(),
                          ", out_dim=", a.dim<ir::attr::OutDim>(), ")");
    case ir::NodeKind::kSeqMask:
      return absl::StrCat("rf.where(rf.sequence_mask(", a.dim<ir::attr::Axis>(), "), ", in(0), ", ",
                          a.num<ir::attr::Value>(), ", allow_broadcast_all_sources=True)");
    case ir::NodeKind::kTrainFlag:
      return "rf.convert_to_tensor(rf.get_run_ctx().train_flag)";
    case ir::NodeKind::kCrossEntropy: {
      const std::string axis = t.id(*g.node(n.inputs[1]).type.sparse_dim);
      std::string ce;
      if (const double* e = n.attrs.find<ir::attr::LabelSmoothing>(); e && *e != 0.0) {
        ce = absl::StrCat("_label_smoothed_ce(", in(0), ", ", in(1), ", axis=", axis,
                          ", label_smoothing=", PyValue(*e).repr(), ")");
      } else {
        ce = absl::StrCat("rf.cross_entropy(estimated=", in(0),
                          ", estimated_type=\"logits\", target=", in(1), ", axis=", axis, ")");
      }
      if (const double* f = n.attrs.find<ir::attr::FocalLossFactor>(); f && *f != 0.0)
        return absl::StrCat("_focal(", ce, ", ", in(0), ", ", in(1), ", axis=", axis,
                            ", factor=", PyValue(*f).repr(), ")");
      return ce;
    }
    case ir::NodeKind::kSelfAttention: {
      const ir::Node& qkv = g.node(n.inputs[1]);
      return absl::StrCat(
          "_self_attention(", in(0), ", ", in(1), ", ", n.inputs.size() == 3 ? in(2) : "None",
          ", axis=", a.dim<ir::attr::Axis>(), ", in_dim=", t.id(qkv.type.dims[0]),
          ", key_dim=", a.dim<ir::attr::KeyDim>(), ", out_dim=", a.dim<ir::attr::OutDim>(),
          ", num_heads=", n.attrs.get<ir::attr::NumHeads>(),
          ", causal=", n.attrs.get<ir::attr::Causal>() ? "True" : "False",
          n.inputs.size() == 3 ? absl::StrCat(", clipping=", n.attrs.get<ir::attr::Clipping>())
                               : "",
          n.attrs.find<ir::attr::AttDropout>()
              ? absl::StrCat(", att_dropout=", PyValue(n.attrs.get<ir::attr::AttDropout>()).repr())
              : "",
          ")");
    }
    case ir::NodeKind::kConv: {
      const ir::Node& w = g.node(n.inputs[1]);
      const auto& axes = n.attrs.get<ir::attr::Axes>();
      const int64_t groups = n.attrs.get<ir::attr::Groups>();
      const ir::Dim& w_in = w.type.dims[axes.size()];
      std::vector<ir::Dim> kernel(w.type.dims.begin(), w.type.dims.begin() + axes.size());
      return absl::StrCat("_conv(", in(0), ", ", in(1), ", ", in(2),
                          ", in_dim=", t.id(groups == 1 ? w_in : w_in.operands()[0]),
                          ", out_dim=", weight_dim_id(t, w.type.dims, w.type.dims.size() - 1),
                          ", axes=", a.dims<ir::attr::Axes>(),
                          ", out_axes=", a.dims<ir::attr::OutAxes>(),
                          ", kernel=", dims_value(t, kernel).repr(),
                          ", strides=", ints(n.attrs.get<ir::attr::Strides>()),
                          ", dilation=", n.attrs.get<ir::attr::Dilation>(), ", groups=", groups,
                          ", padding=", PyValue(n.attrs.get<ir::attr::Padding>()).repr(), ")");
    }
    case ir::NodeKind::kTransposedConv: {
      const ir::Node& w = g.node(n.inputs[1]);
      const size_t axes = n.attrs.find<ir::attr::Axes>()->size();
      std::vector<ir::Dim> kernel(w.type.dims.begin(), w.type.dims.begin() + axes);
      return absl::StrCat(
          "_transposed_conv(",
          // A square filter's in dim is its second occurrence: x's is renamed.
          w.type.dims[axes] == w.type.dims[axes + 1]
              ? absl::StrCat("rf.replace_dim_v2(", in(0), ", in_dim=", t.id(w.type.dims[axes]),
                             ", out_dim=", weight_dim_id(t, w.type.dims, axes + 1), ")")
              : in(0),
          ", ", in(1), ", ", n.inputs.size() == 3 ? in(2) : "None",
          ", in_dim=", weight_dim_id(t, w.type.dims, axes + 1),
          ", out_dim=", t.id(w.type.dims[axes]), ", axes=", a.dims<ir::attr::Axes>(),
          ", out_axes=", a.dims<ir::attr::OutAxes>(), ", kernel=", dims_value(t, kernel).repr(),
          ", strides=", ints(n.attrs.get<ir::attr::Strides>()), ")");
    }
    case ir::NodeKind::kStack: {
      std::vector<std::string> xs;
      for (size_t k = 0; k < n.inputs.size(); ++k) xs.push_back(in(k));
      return absl::StrCat("rf.stack([", absl::StrJoin(xs, ", "),
                          "], out_dim=", a.dim<ir::attr::OutDim>(), ")[0]");
    }
    case ir::NodeKind::kWindow: {
      const int64_t w = *n.attrs.get<ir::attr::WindowDim>().size();
      const bool same = n.attrs.get<ir::attr::Padding>() == "same";
      return absl::StrCat("_window(", in(0), ", axis=", a.dim<ir::attr::Axis>(),
                          ", window_dim=", a.dim<ir::attr::WindowDim>(),
                          ", out_axis=", a.dim<ir::attr::OutAxis>(),
                          ", stride=", n.attrs.get<ir::attr::Stride>(),
                          ", padding=", PyValue(n.attrs.get<ir::attr::Padding>()).repr(),
                          same ? absl::StrCat(", window_left=", (w - 1) / 2) : "", ")");
    }
    case ir::NodeKind::kRawLayer:  // legalize rejected it
      return "None";
    case ir::NodeKind::kLogicalNot:
      return absl::StrCat("rf.logical_not(", in(0), ")");
    case ir::NodeKind::kCumsum:
      return absl::StrCat("rf.cumsum(", in(0), ", spatial_dim=", a.dim<ir::attr::Axis>(), ")");
    case ir::NodeKind::kTopK:
      return absl::StrCat("rf.top_k(", in(0), ", axis=", a.dim<ir::attr::Axis>(),
                          ", k=", *n.attrs.get<ir::attr::KDim>().size(),
                          ", k_dim=", a.dim<ir::attr::KDim>(), ")[",
                          n.attrs.get<ir::attr::Indices>() ? 1 : 0, "]");
    case ir::NodeKind::kPad:
      return absl::StrCat("_pad(", in(0), ", axis=", a.dim<ir::attr::Axis>(),
                          ", left=", n.attrs.get<ir::attr::Left>(),
                          ", right=", n.attrs.get<ir::attr::Right>(), ", value=",
                          n.type.sparse_dim
                              ? absl::StrCat(static_cast<int64_t>(n.attrs.get<ir::attr::Value>()))
                              : a.num<ir::attr::Value>(),
                          ", out_dim=", a.dim<ir::attr::OutDim>(), ")");
    case ir::NodeKind::kReplaceDim:
      if (n.inputs.size() == 1 && n.attrs.find<ir::attr::Axis>()->is_dynamic())
        return absl::StrCat("_copy_dim(", in(0), ", in_dim=", a.dim<ir::attr::Axis>(),
                            ", out_dim=", a.dim<ir::attr::OutDim>(), ")");
      return absl::StrCat("rf.replace_dim_v2(", in(0), ", in_dim=", a.dim<ir::attr::Axis>(),
                          ", out_dim=", a.dim<ir::attr::OutDim>(), ")");
    case ir::NodeKind::kPool:
      return absl::StrCat("_pool(", in(0), ", mode=", PyValue(n.attrs.get<ir::attr::Mode>()).repr(),
                          ", size=", ints(n.attrs.get<ir::attr::Size>()),
                          ", strides=", ints(n.attrs.get<ir::attr::Strides>()),
                          ", padding=", PyValue(n.attrs.get<ir::attr::Padding>()).repr(),
                          ", axes=", a.dims<ir::attr::Axes>(),
                          ", out_axes=", a.dims<ir::attr::OutAxes>(), ")");
    case ir::NodeKind::kBatchNorm:
      return absl::StrCat("_batch_norm(", in(0), ", ", in(1), ", ", in(2), ", ", in(3), ", ", in(4),
                          ", axis=", a.dim<ir::attr::Axis>(),
                          ", epsilon=", a.num<ir::attr::Epsilon>(),
                          ", momentum=", a.num<ir::attr::Momentum>(), ")");
    case ir::NodeKind::kCtcLoss: {
      const ir::Node& targets = g.node(n.inputs[1]);
      return absl::StrCat("_ctc_loss(", in(0), ", ", in(1), ", axis=", a.dim<ir::attr::Axis>(),
                          ", targets_axis=", t.id(targets_axis(targets.type)),
                          ", classes=", t.id(class_dim(g, n)), ")");
    }
    case ir::NodeKind::kShiftAxis: {
      const double* pad = n.attrs.find<ir::attr::PadValue>();
      std::string pad_value = "0.0";
      if (n.type.sparse_dim) {
        pad_value = absl::StrCat(pad ? static_cast<int64_t>(*pad) : 0);
      } else if (pad) {
        pad_value = PyValue(*pad).repr();
      }
      return absl::StrCat("_shift(", in(0), ", axis=", a.dim<ir::attr::Axis>(),
                          ", amount=", n.attrs.get<ir::attr::Amount>(), ", pad_value=", pad_value,
                          ")");
    }
    case ir::NodeKind::kPosEncoding:
      if (const int64_t* loop = n.attrs.find<ir::attr::Loop>())
        return absl::StrCat("_pos_encoding_at(", in(0), ", _t", *loop,
                            ", feature_dim=", t.id(feature_dim(n.type)), ")");
      return absl::StrCat("_pos_encoding(", in(0), ", axis=", a.dim<ir::attr::Axis>(),
                          ", feature_dim=", t.id(feature_dim(n.type)), ")");
    case ir::NodeKind::kRange:
      return absl::StrCat("rf.range_over_dim(", a.dim<ir::attr::DimAttr>(), ", dtype=\"int32\")");
    case ir::NodeKind::kRegressionLoss: {
      std::vector<ir::Dim> features;
      for (const ir::Dim& d : g.node(n.inputs[0]).type.dims) {
        if (d.is_feature_like()) features.push_back(d);
      }
      std::string diff = absl::StrCat(in(0), " - ", in(1));
      std::string per_entry = n.attrs.get<ir::attr::Mode>() == "mse"
                                  ? absl::StrCat("rf.square(", diff, ")")
                                  : absl::StrCat("rf.abs(", diff, ")");
      if (features.empty()) return per_entry;
      return absl::StrCat("rf.reduce_sum(", per_entry, ", axis=", dims_value(t, features).repr(),
                          ")");
    }
    case ir::NodeKind::kCustomLoss:
      return in(0);
    // Loops (see emit_loop): a frame of the input, the state's initial value
    // (before the loop), the state's next value, the frames stacked.
    case ir::NodeKind::kLoopUnstack:
      return absl::StrCat("rf.gather(", in(0), ", axis=", a.dim<ir::attr::Axis>(), ", indices=_t",
                          n.attrs.get<ir::attr::Loop>(), ")");
    case ir::NodeKind::kLoopState:
      return in(0);
    case ir::NodeKind::kLoopNext:
      return in(1);
    case ir::NodeKind::kLoopStack: {
      // Over a new axis: the search picks the best hypothesis and gives the axis its lengths.
      const int64_t loop = n.attrs.get<ir::attr::Loop>();
      for (const ir::Node& e : g.nodes()) {
        if (e.kind == ir::NodeKind::kLoopEnd && e.attrs.get<ir::attr::Loop>() == loop)
          return absl::StrCat("_search", loop, ".stack(_frames_of_", in(0),
                              ", axis=", a.dim<ir::attr::Axis>(), ")");
      }
      return absl::StrCat("rf.stack(_frames_of_", in(0), ", out_dim=", a.dim<ir::attr::Axis>(),
                          ")[0]");
    }
    case ir::NodeKind::kLength:
      return absl::StrCat("_length(", in(0), ", ", a.dim<ir::attr::Axis>(), ")");
    case ir::NodeKind::kLoopEnd:  // emit_loop ends the sequences
      return in(0);
    case ir::NodeKind::kChoice:
      return absl::StrCat("_search", n.attrs.get<ir::attr::Loop>(), ".choose(", in(0), ", ",
                          a.dim<ir::attr::DimAttr>(), ")");
    case ir::NodeKind::kCumConcat: {
      const int64_t loop = n.attrs.get<ir::attr::Loop>();
      return absl::StrCat("_cum_concat(", in(0), ", _acc_", n.name,
                          ", out_dim=", a.dim<ir::attr::OutDim>(), ", t=_t", loop, ")");
    }
    case ir::NodeKind::kWeightNorm:
      break;  // torch-legalize rejected it
  }
  return "";
}

// One loop as a Python for-loop over its axis's frames (in this batch: the
// longest sequence's): the states start at their initial values, the body
// runs in graph order, stacked values collect their frames, and the states
// take their next values at the end of each frame. As on TF, frames past a
// sequence's end are computed too and ignored by what reads the stack.
// A node's line `name = value` (indented): a cum_concat's also keeps its
// frames so far for the next frame (`name, _acc_name = ...`), an LSTM whose
// final state is read its state (`name, _state_name = ...`).
std::string assignment(const ir::Graph& g, const ir::DimTable& t, const ir::Node& n,
                       absl::string_view indent) {
  std::string extra;
  if (n.kind == ir::NodeKind::kCumConcat) extra = absl::StrCat(", _acc_", n.name);
  if (has_final_state_reader(g, n)) extra = absl::StrCat(", _state_", n.name);
  return absl::StrCat(indent, n.name, extra, " = ", value_of(g, t, n, "model"), "\n");
}

std::string member_line(const ir::Graph& g, const ir::DimTable& t, const ir::Node& n) {
  return assignment(g, t, n, "        ");
}

// Before a loop: the states' initial values (their names and next values
// collected), the stacked values' frame lists, the cum_concat caches.
std::string loop_prologue(const ir::Graph& g, const ir::DimTable& t, const ir::LoopAnalysis& loops,
                          const ir::Loop& loop, std::vector<std::string>& states,
                          std::vector<std::string>& nexts) {
  std::string out;
  for (ir::NodeId m : loop.members) {
    const ir::Node& n = g.node(m);
    if (n.kind == ir::NodeKind::kLoopState) {
      absl::StrAppend(&out, "    ", n.name, " = ", value_of(g, t, n, "model"), "\n");
      states.push_back(n.name);
      nexts.push_back(g.node(loops.next_of_state[m.index]).name);
    }
    if (loops.stacked[m.index]) absl::StrAppend(&out, "    _frames_of_", n.name, " = []\n");
    if (n.kind == ir::NodeKind::kCumConcat) absl::StrAppend(&out, "    _acc_", n.name, " = None\n");
  }
  return out;
}

// A loop over a new axis (with its loop_end): at most max_len frames, until
// every sequence ended (_Search). With a choice, each frame computes what
// does not depend on the choice, chooses (the beams of this frame's
// hypotheses), then lets every value of the hypotheses before the choice
// that is read later follow its hypothesis (_Search.follow: the states'
// next values, the cached frames of cum_concat, stacked frames), and
// computes the rest.
std::string emit_search_loop(const ir::Graph& g, const ir::DimTable& t,
                             const ir::LoopAnalysis& loops, size_t id) {
  const ir::Loop& loop = loops.loops[id];
  const std::string search = absl::StrCat("_search", id), frame = absl::StrCat("_t", id);
  const bool beam = loop.choice.valid();
  std::string out =
      absl::StrCat("    # loop ", id, " over ", t.id(*loop.axis), ", until each ",
                   beam ? "hypothesis" : "sequence", " ends", beam ? " (beam search)" : "", "\n");
  absl::StrAppend(&out, "    ", search, " = _Search(", beam ? "beam_size" : "", ")\n");
  std::vector<std::string> states, nexts;
  out += loop_prologue(g, t, loops, loop, states, nexts);
  // Whether a member depends on this frame's choice (the states do not;
  // next values and the end come after the choice).
  std::vector<bool> after(g.size(), false);
  std::vector<bool> read_after(g.size(), false);
  for (ir::NodeId m : loop.members) {
    const ir::Node& n = g.node(m);
    if (n.kind == ir::NodeKind::kLoopState) continue;
    bool a = n.kind == ir::NodeKind::kChoice || n.kind == ir::NodeKind::kLoopNext ||
             n.kind == ir::NodeKind::kLoopEnd;
    for (ir::NodeId in : n.inputs) a = a || after[in.index];
    after[m.index] = a;
  }
  for (ir::NodeId m : loop.members) {
    const ir::Node& n = g.node(m);
    if (!after[m.index] || n.kind == ir::NodeKind::kChoice) continue;
    for (ir::NodeId in : n.inputs) {
      if (loops.loop_of[in.index] == static_cast<int32_t>(id)) read_after[in.index] = true;
    }
  }
  const ir::Node& end = g.node(loop.end);
  absl::StrAppend(&out, "    for ", frame, " in range(int(", g.node(end.inputs[1]).name,
                  ".raw_tensor)):\n");
  auto emit = [&](const ir::Node& n) {
    if (n.kind != ir::NodeKind::kLoopEnd) out += member_line(g, t, n);
  };
  for (ir::NodeId m : loop.members) {
    const ir::Node& n = g.node(m);
    if (n.kind != ir::NodeKind::kLoopState && !after[m.index]) emit(n);
  }
  if (beam) {
    emit(g.node(loop.choice));
    for (ir::NodeId m : loop.members) {
      const ir::Node& n = g.node(m);
      if (after[m.index]) continue;
      if (read_after[m.index] || (loops.stacked[m.index] && n.kind != ir::NodeKind::kLoopState))
        absl::StrAppend(&out, "        ", n.name, " = ", search, ".follow(", n.name, ")\n");
      if (n.kind == ir::NodeKind::kCumConcat)
        absl::StrAppend(&out, "        _acc_", n.name, " = ", search, ".follow(_acc_", n.name,
                        ")\n");
    }
    for (ir::NodeId m : loop.members) {
      const ir::Node& n = g.node(m);
      if (n.kind == ir::NodeKind::kCumConcat && after[m.index])
        absl::StrAppend(&out, "        _acc_", n.name, " = ", search, ".follow(_acc_", n.name,
                        ")\n");
    }
  }
  for (ir::NodeId m : loop.members) {
    const ir::Node& n = g.node(m);
    if (after[m.index] && n.kind != ir::NodeKind::kChoice) emit(n);
  }
  absl::StrAppend(&out, "        ", search, ".end(", g.node(end.inputs[0]).name, ", ", frame,
                  ")\n");
  for (ir::NodeId m : loop.members) {
    if (!loops.stacked[m.index]) continue;
    const std::string& name = g.node(m).name;
    absl::StrAppend(&out, "        _frames_of_", name, " = ", search, ".follow_all(_frames_of_",
                    name, ") + [", name, "]\n");
  }
  if (!states.empty()) {
    absl::StrAppend(&out, "        ", absl::StrJoin(states, ", "), " = ",
                    absl::StrJoin(nexts, ", "), "\n");
  }
  absl::StrAppend(&out, "        if ", search, ".all_ended():\n            break\n");
  return out;
}

std::string emit_loop(const ir::Graph& g, const ir::DimTable& t, const ir::LoopAnalysis& loops,
                      size_t id) {
  const ir::Loop& loop = loops.loops[id];
  if (loop.end.valid()) return emit_search_loop(g, t, loops, id);
  std::string out = absl::StrCat("    # loop ", id, " over ", t.id(*loop.axis), "\n");
  std::vector<std::string> states, nexts;
  out += loop_prologue(g, t, loops, loop, states, nexts);
  absl::StrAppend(&out, "    for _t", id, " in range(_frames(", t.id(*loop.axis), ")):\n");
  for (ir::NodeId m : loop.members) {
    const ir::Node& n = g.node(m);
    if (n.kind != ir::NodeKind::kLoopState) out += member_line(g, t, n);
  }
  for (ir::NodeId m : loop.members) {
    if (loops.stacked[m.index])
      absl::StrAppend(&out, "        _frames_of_", g.node(m).name, ".append(", g.node(m).name,
                      ")\n");
  }
  if (!states.empty()) {
    absl::StrAppend(&out, "        ", absl::StrJoin(states, ", "), " = ",
                    absl::StrJoin(nexts, ", "), "\n");
  }
  return out;
}

// The step stage's code: every step node in an order that respects the
// dataflow, each loop as one block (emit_loop) once all its inputs from
// outside are computed.
std::string step_code(const ir::Graph& g, const ir::DimTable& t, const ir::LoopAnalysis& loops) {
  std::vector<bool> done(g.size(), false);
  std::vector<bool> loop_done(loops.loops.size(), false);
  auto ready = [&](ir::NodeId in) {
    const int32_t l = loops.loop_of[in.index];
    return l >= 0 ? loop_done[l] : done[in.index] || g.node(in).stage != ir::Stage::kStep;
  };
  std::string out;
  for (bool progress = true; progress;) {
    progress = false;
    for (size_t i = 0; i < g.size(); ++i) {
      const ir::Node& n = g.nodes()[i];
      if (n.stage != ir::Stage::kStep || done[i]) continue;
      const int32_t l = loops.loop_of[i];
      if (n.attrs.find<ir::attr::Branch>()) continue;  // written with its cond
      if (n.kind == ir::NodeKind::kCond) {
        // A Python if: only the branch the condition picks runs.
        const int64_t id = n.attrs.get<ir::attr::Cond>();
        std::array<std::vector<size_t>, 2> members;
        for (size_t j = 0; j < i; ++j) {
          const ir::Node& m = g.nodes()[j];
          const int64_t* c = m.attrs.find<ir::attr::Cond>();
          if (m.stage == ir::Stage::kStep && c && *c == id && m.attrs.find<ir::attr::Branch>())
            members[m.attrs.get<ir::attr::Branch>()].push_back(j);
        }
        bool cond_ready = ready(n.inputs[0]);
        for (int k = 0; k < 2; ++k) {
          for (size_t j : members[k]) {
            for (ir::NodeId in : g.nodes()[j].inputs) {
              const ir::Node& src = g.node(in);
              const int64_t* c = src.attrs.find<ir::attr::Cond>();
              const bool inside = c && *c == id && src.attrs.find<ir::attr::Branch>();
              if (!inside && !ready(in)) cond_ready = false;
            }
          }
          const ir::Node& value = g.node(n.inputs[1 + k]);
          const int64_t* c = value.attrs.find<ir::attr::Cond>();
          if (!(c && *c == id && value.attrs.find<ir::attr::Branch>()) && !ready(n.inputs[1 + k]))
            cond_ready = false;
        }
        if (!cond_ready) continue;
        absl::StrAppend(&out, "    if bool(", g.node(n.inputs[0]).name, ".raw_tensor):\n");
        for (int k = 0; k < 2; ++k) {
          if (k == 1) out += "    else:\n";
          for (size_t j : members[k]) {
            out += assignment(g, t, g.nodes()[j], "        ");
            done[j] = true;
          }
          absl::StrAppend(&out, "        ", n.name, " = ", g.node(n.inputs[1 + k]).name, "\n");
        }
        done[i] = progress = true;
        continue;
      }
      if (l < 0) {
        if (!std::all_of(n.inputs.begin(), n.inputs.end(), ready)) continue;
        out += assignment(g, t, n, "    ");
        done[i] = progress = true;
        continue;
      }
      // A loop: ready when every member's input from outside it is.
      bool loop_ready = true;
      for (ir::NodeId m : loops.loops[l].members) {
        for (ir::NodeId in : g.node(m).inputs) {
          if (loops.loop_of[in.index] != l && !ready(in)) loop_ready = false;
        }
      }
      if (!loop_ready) continue;
      out += emit_loop(g, t, loops, l);
      for (ir::NodeId m : loops.loops[l].members) done[m.index] = true;
      loop_done[l] = progress = true;
    }
  }
  return out;
}

// The helpers a torch config may call, one top-level definition each,
// separated by two blank lines; a config holds those its code uses (see
// used_helpers).
constexpr char kHelpers[] = R"py(
class _Module(rf.Module):
    """A module of retc's model tree: it holds params and submodules by name."""


def _add_param(root, path, param):
    """Puts `param` at the dotted module path (its state_dict key)."""
    *parents, name = path.split(".")
    module = root
    for part in parents:
        if not hasattr(module, part):
            setattr(module, part, _Module())
        module = getattr(module, part)
    setattr(module, name, param)


def _param(root, path):
    """The param at the dotted module path."""
    value = root
    for part in path.split("."):
        value = getattr(value, part)
    return value


def _random(distribution, dims, a, b, seed, dtype):
    """Seeded random initial values: uniform in [a, b), normal or truncated normal
    (within 2 stddevs) with mean a and stddev b; the same on every run."""
    rng = numpy.random.RandomState(seed)
    shape = [d.dimension for d in dims]
    if distribution == "uniform":
        value = rng.uniform(a, b, shape)
    else:
        value = rng.normal(a, b, shape)
        while distribution == "truncated_normal":
            outside = numpy.abs(value - a) > 2 * b
            if not outside.any():
                break
            value[outside] = rng.normal(a, b, int(outside.sum()))
    return rf.convert_to_tensor(value.astype(dtype), dims=dims)


def _softplus(x):
    """log(1 + exp(x)), computed stably (rf has no softplus)."""
    return rf.Tensor("softplus", dims=x.dims, dtype=x.dtype,
                     raw_tensor=torch.nn.functional.softplus(x.raw_tensor))


def _normalize(x, *, axis, epsilon):
    """(x - mean) / sqrt(variance + epsilon) over axis, the variance biased (TF's
    norm layer); over one static dim torch's fused layer norm computes it."""
    if len(axis) != 1 or axis[0].dimension is None:
        return rf.normalize(x, axis=axis, epsilon=epsilon)
    dims = [d for d in x.dims if d != axis[0]] + [axis[0]]
    x = x.copy_transpose(dims)
    y = torch.nn.functional.layer_norm(x.raw_tensor, (axis[0].dimension,), eps=epsilon)
    return rf.Tensor("normalize", dims=dims, dtype=x.dtype, raw_tensor=y)


def _norm(x, *, axis):
    """The L2 norm over `axis`: sqrt(sum(x^2))."""
    return rf.sqrt(rf.reduce_sum(rf.square(x), axis=axis))


def _weight_dropout(w, rate):
    """Dropout on a weight, a new mask at each training step; w itself in evaluation."""
    return rf.dropout(w, rate, axis=w.dims)


def _weight_noise(w, stddev):
    """Gaussian noise on a weight, new at each training step; w itself in evaluation."""
    if not rf.get_run_ctx().train_flag:
        return w
    return w + rf.random_normal(w.dims, stddev=stddev, dtype=w.dtype)


def _apply_param_options(model, options):
    """retc's param options that RETURNN's torch engine has no config entry for,
    as TF's RETURNN applies them (see README, "Parameters"): per-param gradient
    clipping (each entry of the gradient clipped to [-c, c]) and decoupled
    weight decay (before each optimizer step, after the gradients are computed:
    w <- w - 2*lambda*w)."""
    decayed = []
    for path, opts in options.items():
        raw = _param(model, path).raw_tensor
        if "gradient_clip" in opts:
            raw.register_hook(lambda grad, c=opts["gradient_clip"]: grad.clamp(-c, c))
        if "decoupled_weight_decay" in opts:
            decayed.append((raw, opts["decoupled_weight_decay"]))
    global _decay_hook
    if _decay_hook is not None:
        _decay_hook.remove()  # a new model replaces the previous one
        _decay_hook = None
    if decayed:
        def decay(_optimizer, _args, _kwargs):
            with torch.no_grad():
                for raw, lam in decayed:
                    raw.mul_(1.0 - 2.0 * lam)

        from torch.optim.optimizer import register_optimizer_step_pre_hook

        _decay_hook = register_optimizer_step_pre_hook(decay)


_decay_hook = None


def _coupled_weight_decay(model, options):
    """Coupled weight decay, as TF's RETURNN adds it to the loss: sum of lambda * sum(w^2)."""
    terms = [rf.reduce_sum(rf.square(_param(model, path)), axis=_param(model, path).dims)
             * opts["coupled_weight_decay"]
             for path, opts in options.items() if "coupled_weight_decay" in opts]
    total = terms[0]
    for term in terms[1:]:
        total = total + term
    return total


def _param_groups(*, model, rf_model, **_kwargs):
    """The optimizer's param groups: one per learning-rate multiplier."""
    groups = {}
    for name, param in rf_model.named_parameters():
        k = _param_options.get(name, {}).get("learning_rate_multiplier", 1.0)
        groups.setdefault(k, []).append(param.raw_tensor)
    return [{"params": params, "learning_rate_multiplier": k} for k, params in sorted(groups.items())]


def _torch_gate_order(w, gates, out_dim):
    """w with its gate blocks reordered from retc's layout (TF's NativeLstm2:
    cell input, input, forget, output gate) to torch's (input, forget, cell
    input, output), so that one checkpoint means the same LSTM on both targets."""
    n = out_dim.dimension
    order = numpy.concatenate([numpy.arange(n, 3 * n), numpy.arange(0, n), numpy.arange(3 * n, 4 * n)])
    indices = rf.convert_to_tensor(order.astype("int32"), dims=[gates], sparse_dim=gates, device=w.device)
    return rf.gather(w, indices=indices, axis=gates)


def _lstm(x, w, w_re, b, *, axis, out_dim, backward, initial=None, with_state=False):
    """An LSTM over `axis` with retc's params w [in, 4*out], w_re [out, 4*out],
    b [4*out], gates in TF's order (see _torch_gate_order), from the state `initial`
    ((h, c); default zeros). with_state: also the state (h, c) after each sequence's
    last frame (backward: its first)."""
    in_dim, gates = w.dims
    w, w_re, b = (_torch_gate_order(v, gates, out_dim) for v in (w, w_re, b))
    if backward:
        x = rf.reverse_sequence(x, axis=axis)
    batch_dims = [d for d in x.dims if d not in (axis, in_dim)]
    if initial is None:
        initial = (rf.zeros(batch_dims + [out_dim]),) * 2
    h0, c0 = (rf.expand_dims(s, [d for d in batch_dims if d not in s.dims]) for s in initial)
    y, final = x._raw_backend.lstm(
        source=x, state_c=c0, state_h=h0,
        ff_weight=w.copy_compatible_to_dims([gates, in_dim]),
        rec_weight=w_re.copy_compatible_to_dims([gates, out_dim]),
        bias=b, spatial_dim=axis, in_dim=in_dim, out_dim=out_dim)
    if backward:
        y = rf.reverse_sequence(y, axis=axis)
    return (y, final) if with_state else y


def _unprime(x):
    """x with each later occurrence of a dim (see _primed) renamed back to the
    dim, where x has it only once (a product with a square weight)."""
    for occurrence, dim in _primed:
        if occurrence in x.dims and dim not in x.dims:
            x = rf.replace_dim_v2(x, in_dim=occurrence, out_dim=dim)
    return x


def _windowed(y, computed, model_dims, in_dims, same_strides=None):
    """A conv's or pool's output with the out dims rf computed renamed to the
    model's. A dynamic model dim that is not an input dim (time_s2 of a
    strided conv) is made here, with this batch's lengths: rf's, or with
    "same" padding (same_strides) TF's ceil(n / stride) of a sequence of n
    (the padding follows the longest sequence, so rf's count for a shorter
    one can be a frame less)."""
    for i, (c, d) in enumerate(zip(computed, model_dims)):
        if c == d:
            continue
        if d.dimension is None and d not in in_dims:
            d.reset_eager()  # the lengths of the previous batch, and what was cached from them
            if same_strides is None:
                d.dyn_size_ext = c.dyn_size_ext
            else:
                d.dyn_size_ext = (in_dims[i].dyn_size_ext + (same_strides[i] - 1)) // same_strides[i]
        y = rf.replace_dim_v2(y, in_dim=c, out_dim=d)
    return y


def _masked_select(x, mask, *, axis, out_dim):
    """The frames of x along `axis` where `mask` (within the lengths), packed per
    sequence into the model's dynamic `out_dim`, with this batch's lengths."""
    y, packed = rf.masked_select(x, mask=mask, dims=[axis])
    out_dim.reset_eager()
    out_dim.dyn_size_ext = packed.dyn_size_ext
    return rf.replace_dim_v2(y, in_dim=packed, out_dim=out_dim)


def _inverse_window(x, *, axis, window_dim, out_axis, overlap_dim, stride, window_left):
    """The windows of x along `axis` averaged back into the frames of `out_axis`: frame t
    is the mean of the entries (t', w) with t' * stride + w - window_left = t (as TF's)."""
    dev = x.device
    n, w = overlap_dim.dimension, window_dim.dimension
    t = rf.range_over_dim(out_axis, device=dev) + (window_left - (n - 1) * stride)
    k = rf.range_over_dim(overlap_dim, device=dev)
    win = rf.combine_bc(rf.floor_divide(t, stride), "+", k)
    off = rf.combine_bc((n - 1 - k) * stride, "+", t % stride)
    length = rf.copy_to_device(axis.get_size_tensor(), dev)
    valid = rf.logical_and(rf.logical_and(win >= 0, rf.compare_bc(win, "<", length)),
                           rf.logical_and(off >= 0, off < w))
    y = rf.gather(x, indices=rf.where(valid, win, 0), axis=axis)
    y = rf.gather(y, indices=rf.where(valid, off, 0), axis=window_dim)
    y = rf.where(valid, y, rf.zeros((), dtype=x.dtype, device=dev))
    count = rf.reduce_sum(rf.cast(valid, x.dtype), axis=overlap_dim)
    return rf.reduce_sum(y, axis=overlap_dim) / rf.maximum(count, 1.0)


def _slice_at(x, start, *, axis, out_dim):
    """x along `axis` from each sequence's start, |out_dim| entries; 0 past its length."""
    idx = rf.combine_bc(start, "+", rf.range_over_dim(out_dim, dtype=start.dtype, device=start.device))
    valid = rf.logical_and(rf.compare_bc(idx, "<", axis.get_size_tensor(device=x.device)), idx >= 0)
    y = rf.gather(x, indices=idx, axis=axis, clip_to_valid=True)
    return rf.where(valid, y, rf.zeros((), dtype=x.dtype, device=x.device))


def _repeat(x, reps, *, axis, out_dim):
    """Each frame of x along `axis` repeated reps times (a scalar, or per frame)
    into the model's dynamic `out_dim`, with this batch's lengths."""
    lens_dims = axis.dyn_size_ext.dims if axis.dyn_size_ext is not None else ()
    for d in [d for d in lens_dims if d not in reps.dims] + ([axis] if axis not in reps.dims else []):
        reps = rf.expand_dim(reps, d)  # a count per frame, over the axis's lengths' dims
    y, packed = rf.repeat(x, in_spatial_dim=axis, repeats=reps)
    out_dim.reset_eager()
    out_dim.dyn_size_ext = packed.dyn_size_ext
    return rf.replace_dim_v2(y, in_dim=packed, out_dim=out_dim)


def _length(x, axis):
    """The lengths of the sequences along `axis` (int32 [batch]) on x's device."""
    return rf.copy_to_device(axis.get_size_tensor(), x.device)


class _Search:
    """A loop over a new axis: which sequences ended (after the frame where their end
    condition held, that frame included), and their lengths. With a beam `size`, the
    beam search of the loop's choice: the `size` best hypotheses by their summed
    log-probs (a dim "beam" after the first choice); `follow` takes a value of the
    hypotheses before this frame's choice to those after it."""

    def __init__(self, size=None):
        self.size = size
        self.beam = self.prev = self.backrefs = self.scores = None
        self.ended = self.lengths = None

    def choose(self, log_probs, labels):
        if self.ended is not None:
            # An ended hypothesis goes on with label 0 at no cost, and only so.
            first = rf.compare(rf.range_over_dim(labels, device=log_probs.device), "==", 0)
            log_probs = rf.where(self.ended, rf.where(first, 0.0, float("-inf")), log_probs)
        scores = log_probs if self.scores is None else self.scores + log_probs
        size = labels.dimension * (1 if self.beam is None else self.beam.dimension)
        axes = labels if self.beam is None else [self.beam, labels]
        k = min(self.size, size)
        self.scores, indices, beam = rf.top_k(scores, axis=axes, k=k, k_dim=Dim(k, name="beam"))
        self.prev, self.beam = self.beam, beam
        if self.prev is None:
            self.backrefs, choice = None, indices
        else:
            self.backrefs, choice = indices
        self.ended, self.lengths = self.follow(self.ended), self.follow(self.lengths)
        return choice

    def follow(self, x):
        if isinstance(x, tuple):  # _cum_concat's accumulated frames and their dim
            return (self.follow(x[0]),) + x[1:]
        if x is None or self.backrefs is None or self.prev not in x.dims:
            return x
        return rf.gather(x, indices=self.backrefs, axis=self.prev)

    def follow_all(self, frames):
        return [self.follow(f) for f in frames]

    def end(self, done, t):
        if self.ended is None:
            self.lengths = rf.zeros(done.dims, dtype="int32", device=done.device) + (t + 1)
            self.ended = done
            return
        self.lengths = rf.where(self.ended, self.lengths, t + 1)
        self.ended = rf.logical_or(self.ended, done)

    def all_ended(self):
        return bool(rf.reduce_all(self.ended, axis=self.ended.dims).raw_tensor)

    def stack(self, frames, *, axis):
        """The frames stacked along `axis` (the best hypothesis's, with a beam), and
        `axis` given their lengths."""
        y, stacked = rf.stack(frames)
        lengths = self.lengths
        if self.beam is not None:
            best = rf.reduce_argmax(self.scores, axis=self.beam)
            y = rf.gather(y, indices=best, axis=self.beam)
            if self.beam in lengths.dims:  # else an end of every hypothesis alike (a length)
                lengths = rf.gather(lengths, indices=best, axis=self.beam)
        axis.reset_eager()
        axis.dyn_size_ext = rf.copy_to_device(lengths, "cpu")
        return rf.replace_dim_v2(y, in_dim=stacked, out_dim=axis)


def _cum_concat(x, acc, *, out_dim, t):
    """The frames of x so far along the model's `out_dim` (t + 1 of them): `acc`, the
    frames before (with its own dim), then x. Returns (value, accumulated)."""
    one = Dim(1, name="frame")
    x = rf.expand_dim(x, one)
    if acc is not None:
        x, one = rf.concat((acc[0], acc[1]), (x, one), allow_broadcast=True)
    out_dim.reset_eager()
    out_dim.dyn_size_ext = rf.convert_to_tensor(t + 1, dims=(), dtype="int32", device="cpu")
    return rf.replace_dim_v2(x, in_dim=one, out_dim=out_dim), (x, one)


def _pad_same(x, *, axes, sizes, strides, dilation, value, out_dims=None):
    """TF's "same" padding, explicitly: along each axis of n frames, k - 1 - (n - 1) % s
    frames in all (k the dilated window), the odd one on the right."""
    pads = []
    for axis, k, s in zip(axes, sizes, strides):
        n = x.raw_tensor.shape[x.dims.index(axis)]
        total = max((k - 1) * dilation - (n - 1) % s, 0)
        pads.append((total // 2, total - total // 2))
    if not any(left or right for left, right in pads):
        return x, axes
    # The right padding of a dynamic axis goes after each sequence's end: the
    # frames between it and the tensor's end are masked to the same value.
    return rf.pad(x, axes=axes, padding=pads, value=value, out_dims=out_dims)


def _conv(x, w, b, *, in_dim, out_dim, axes, out_axes, kernel, strides, dilation, groups, padding):
    """RETURNN's TF conv layer: frames past a sequence's end are 0 (masked),
    "same" pads as TF does; the model's out axes."""
    x = x.copy_masked(0.0, dims=[d for d in axes if d.dimension is None])
    in_axes = axes
    if padding == "same":
        x, axes = _pad_same(x, axes=axes, sizes=[k.dimension for k in kernel], strides=strides,
                            dilation=dilation, value=0.0)
    y, computed = rf.conv(x, in_dim=in_dim, out_dim=out_dim, in_spatial_dims=axes, filter=w, filter_size=kernel,
                          padding="valid", strides=strides, dilation_rate=dilation, groups=groups, bias=b,
                          use_mask=False)
    return _windowed(y, computed, out_axes, in_axes, strides if padding == "same" else None)


def _window(x, *, axis, window_dim, out_axis, stride, padding, window_left=None):
    """RETURNN's TF window layer: each frame's window (centered with "same"
    padding), every stride-th; the model's out axis, with TF's lengths
    (windowed_dim's: ceil(n / stride) for "same")."""
    y, computed = rf.window(x, spatial_dim=axis, window_dim=window_dim, window_left=window_left,
                            padding=padding, stride=stride)
    return _windowed(y, [computed], [out_axis], [axis], [stride] if padding == "same" else None)


def _copy_dim(x, *, in_dim, out_dim):
    """x with the dynamic in_dim renamed to out_dim, which gets its lengths
    (once per batch: a second copy finds them set)."""
    lengths = in_dim.dyn_size_ext
    if out_dim.dyn_size_ext is None or out_dim.dyn_size_ext.raw_tensor is not lengths.raw_tensor:
        out_dim.reset_eager()
        out_dim.dyn_size_ext = lengths.copy()
    return rf.replace_dim_v2(x, in_dim=in_dim, out_dim=out_dim)


def _pad(x, *, axis, left, right, value, out_dim):
    """x padded along axis (a dynamic one after each sequence's end, as TF's
    pad with handle_dynamic_dims); the model's out dim, with this batch's
    lengths (n + left + right)."""
    y, (computed,) = rf.pad(x, axes=[axis], padding=[(left, right)], value=value, handle_dynamic_dims=True)
    if out_dim.dimension is None:
        out_dim.reset_eager()
        out_dim.dyn_size_ext = axis.dyn_size_ext + (left + right)
    return rf.replace_dim_v2(y, in_dim=computed, out_dim=out_dim)


def _transposed_conv(x, w, b, *, in_dim, out_dim, axes, out_axes, kernel, strides):
    """RETURNN's TF transposed_conv ("valid" padding, filter [kernel..., out,
    in]): frames past a sequence's end are 0 (masked); the model's out axes."""
    x = x.copy_masked(0.0, dims=[d for d in axes if d.dimension is None])
    y, computed = rf.transposed_conv(x, in_dim=in_dim, out_dim=out_dim, in_spatial_dims=axes, filter=w,
                                     filter_size=kernel, padding="valid", strides=strides, bias=b,
                                     use_mask=False)
    for i, c in enumerate(computed):  # the lengths of a dynamic axis: n * stride + kernel - stride
        if c.dimension is None:
            c.dyn_size_ext = axes[i].dyn_size_ext * strides[i] + max(kernel[i].dimension - strides[i], 0)
    return _windowed(y, computed, out_axes, axes)


def _pool(x, *, mode, size, strides, padding, axes, out_axes):
    """RETURNN's TF pool layer: max pooling masks frames past a sequence's end
    (avg does not, as on TF) and sets them to 0 in its output; "same" pads as
    TF does, and avg pooling then
    averages over the window's frames within the tensor only (as TF)."""
    if mode == "max":
        x = x.copy_masked(float("-inf"), dims=[d for d in axes if d.dimension is None])
    count = None
    in_axes = axes
    if padding == "same":
        ones = rf.ones(x.dims, dtype=x.dtype) if mode == "avg" else None
        x, axes = _pad_same(x, axes=axes, sizes=size, strides=strides, dilation=1,
                            value=float("-inf") if mode == "max" else 0.0)
        if ones is not None and axes is not in_axes:
            ones, _ = _pad_same(ones, axes=in_axes, sizes=size, strides=strides, dilation=1, value=0.0,
                                out_dims=axes)
            count, _ = rf.pool(ones, mode="avg", pool_size=size, padding="valid", strides=strides,
                               in_spatial_dims=axes, use_mask=False)
    y, computed = rf.pool(x, mode=mode, pool_size=size, padding="valid", strides=strides, in_spatial_dims=axes,
                          use_mask=False)
    if count is not None:
        y = y / count
    y = _windowed(y, computed, out_axes, in_axes, strides if padding == "same" else None)
    if mode == "max":  # frames past the end: 0, not -inf (as on TF)
        y = y.copy_masked(0.0, dims=[d for d in out_axes if d.dimension is None])
    return y


def _frames(axis):
    """How many frames a loop over axis runs in this batch (the longest sequence's)."""
    return int(axis.get_dim_value())


def _batch_major(x):
    """x's dims as the forward writers store a sequence: the batch dim, the dynamic dims,
    then the static ones (RETURNN's batch-spatial-major order)."""
    rest = [d for d in x.dims if d != batch_dim]
    return [batch_dim] + [d for d in rest if d.dimension is None] + [d for d in rest if d.dimension is not None]


class _HdfWriter(ForwardCallbackIface):
    """Writes the output `name` of each sequence to the HDF file `path` as RETURNN's TF
    forward task does (SimpleHDFWriter; HDFDataset reads it): `dim` is the feature dim's
    size (the number of classes if sparse), `ndim` the number of dims without the batch."""

    def __init__(self, path, name, dim, ndim):
        self.path, self.name, self.dim, self.ndim = path, name, dim, ndim
        self.writer = None

    def __getstate__(self):  # the data loader's worker gets the config, not the open file
        return dict(self.__dict__, writer=None)

    def init(self, *, model):
        from returnn.datasets.hdf import SimpleHDFWriter

        self.writer = SimpleHDFWriter(filename=self.path, dim=self.dim, ndim=self.ndim)

    def process_seq(self, *, seq_tag, outputs):
        out = outputs[self.name]
        value = out.raw_tensor
        seq_len = {i: numpy.array([value.shape[i]]) for i, d in enumerate(out.dims) if d.dimension is None}
        self.writer.insert_batch(inputs=value[None], seq_len=seq_len, seq_tag=[seq_tag])

    def finish(self):
        self.writer.close()


class _SearchWriter(ForwardCallbackIface):
    """Writes the labels `name` of each sequence to `path` in RETURNN's search output
    format "py": {seq_tag: "label label ...", ...}."""

    def __init__(self, path, name):
        self.path, self.name = path, name
        self.hyps = {}

    def init(self, *, model):
        self.hyps = {}

    def process_seq(self, *, seq_tag, outputs):
        self.hyps[seq_tag] = " ".join(str(int(v)) for v in outputs[self.name].raw_tensor)

    def finish(self):
        with open(self.path, "w") as f:
            f.write("{\n")
            for tag, hyp in self.hyps.items():
                f.write("%r: %r,\n" % (tag, hyp))
            f.write("}\n")


def _frame_error(logits, targets, axis):
    """1 where the best class is not the target, else 0."""
    return rf.cast(rf.not_equal(rf.reduce_argmax(logits, axis=axis), targets), "float32")


def _label_smoothed_ce(logits, targets, *, axis, label_smoothing):
    """Cross-entropy against smoothed targets, as TF's RETURNN computes it: the
    target class gets 1 - e, every other class e / (C - 1); minus the best
    value such targets allow (a constant)."""
    num_classes = axis.dimension
    confidence = 1.0 - label_smoothing
    low = label_smoothing / (num_classes - 1)
    normalizing = -(confidence * math.log(confidence) + (num_classes - 1) * low * math.log(low + 1e-20))
    log_probs = rf.log_softmax(logits, axis=axis)
    target_log_prob = rf.gather(log_probs, indices=targets, axis=axis)
    ce = -(confidence - low) * target_log_prob - low * rf.reduce_sum(log_probs, axis=axis)
    return ce - normalizing


def _focal(ce, logits, targets, *, axis, factor):
    """RETURNN's focal loss: each frame's loss times (1 - p_target)^factor."""
    p = rf.gather(rf.softmax(logits, axis=axis), indices=targets, axis=axis)
    return ce * (1.0 - p) ** factor


def _ctc_loss(logits, targets, *, axis, targets_axis, classes):
    """RETURNN's CTC loss per sequence, the blank last in `classes`; a
    sequence whose labels cannot align with its frames adds 0 (as on TF)."""
    logits = logits.copy()
    logits.feature_dim = classes
    return rf.ctc_loss(logits=logits, targets=targets, input_spatial_dim=axis,
                       targets_spatial_dim=targets_axis, blank_index=classes.dimension - 1)


def _ctc_error(logits, targets, *, axis, targets_axis, classes):
    """Edits between the greedy CTC decoding (repeats collapsed, blanks removed) and the targets."""
    labels, labels_axis = rf.ctc_greedy_decode(logits, in_spatial_dim=axis, blank_index=classes.dimension - 1,
                                               wb_target_dim=classes)
    return rf.cast(rf.edit_distance(labels, labels_axis, targets, targets_axis), "float32")


def _self_attention(x, qkv_weight, rel_table, *, axis, in_dim, key_dim, out_dim, num_heads, causal,
                    clipping=0, att_dropout=0.0):
    """RETURNN's TF self_attention layer, op for op: one matmul with the QKV
    weight, whose columns are per head [query | key | value]; queries scaled by
    key_dim_per_head^-0.5; relative positions (key_shift) from rel_table rows
    clip(j - i, -clipping, clipping) + clipping; keys past a sequence's end
    masked (causal: later keys); softmax over the keys; in training dropout on
    the weights (att_dropout, elementwise)."""
    qkv_dim = qkv_weight.dims[1]
    qkv = rf.matmul(x, qkv_weight, reduce=in_dim)
    heads = Dim(num_heads, name="heads")
    per_head = Dim(qkv_dim.dimension // num_heads, name="qkv_per_head")
    qkv = rf.split_dims(qkv, axis=qkv_dim, dims=[heads, per_head])
    key_per_head = Dim(key_dim.dimension // num_heads, name="key_per_head")
    key_per_head_k = Dim(key_dim.dimension // num_heads, name="key_per_head_k")
    value_per_head = Dim(out_dim.dimension // num_heads, name="value_per_head")
    q, k, v = rf.split(qkv, axis=per_head, out_dims=[key_per_head, key_per_head_k, value_per_head])
    k = rf.replace_dim_v2(k, in_dim=key_per_head_k, out_dim=key_per_head)
    q = q * (key_per_head.dimension ** -0.5)
    k, keys = rf.replace_dim(k, in_dim=axis)
    v = rf.replace_dim_v2(v, in_dim=axis, out_dim=keys)
    energy = rf.matmul(q, k, reduce=key_per_head)
    if rel_table is not None:
        rel_dim, rel_feature = rel_table.dims
        distance = rf.range_over_dim(keys) - rf.range_over_dim(axis)
        indices = rf.clip_by_value(distance, -clipping, clipping) + clipping
        indices.sparse_dim = rel_dim
        encoding = rf.gather(rel_table, indices=indices, axis=rel_dim)
        encoding = rf.replace_dim_v2(encoding, in_dim=rel_feature, out_dim=key_per_head)
        energy = energy + rf.matmul(q, encoding, reduce=key_per_head)
    if causal:
        mask = rf.range_over_dim(keys) <= rf.range_over_dim(axis)
    else:
        mask = rf.sequence_mask(keys)
    energy = rf.where(mask, energy, float("-inf"), allow_broadcast_all_sources=True)
    weights = rf.softmax(energy, axis=keys, use_mask=False)
    if att_dropout:
        weights = rf.dropout(weights, att_dropout, axis=weights.dims)
    y = rf.matmul(weights, v, reduce=keys, use_mask=False)  # masked keys have weight 0
    return rf.merge_dims(y, dims=[heads, value_per_head], out_dim=out_dim)[0]


def _batch_norm(x, mean, variance, gamma, beta, *, axis, epsilon, momentum):
    """RETURNN's TF batch_norm (masked_time, param_version 2): in training the
    statistics of this batch over all frames but padding, and the running ones
    move towards them (r += (batch - r) * momentum, after use); in evaluation
    the running statistics. (x - mean) / sqrt(var + epsilon) * gamma + beta."""
    if rf.get_run_ctx().train_flag:
        reduce = [d for d in x.dims if d != axis]
        batch_mean, batch_variance = rf.moments(x, axis=reduce, use_mask=True)
        with torch.no_grad():
            mean.assign_add((rf.stop_gradient(batch_mean) - mean) * momentum)
            variance.assign_add((rf.stop_gradient(batch_variance) - variance) * momentum)
        use_mean, use_variance = batch_mean, batch_variance
    else:
        use_mean, use_variance = mean, variance
    return (x - use_mean) * rf.rsqrt(use_variance + epsilon) * gamma + beta


def _shift(x, *, axis, amount, pad_value):
    """x shifted along axis by amount frames (right if positive), padded with pad_value; the same shape."""
    if amount > 0:
        return rf.shift_right(x, axis=axis, pad_value=pad_value, amount=amount)
    return rf.shift_left(x, axis=axis, pad_value=pad_value, amount=-amount)


def _pos_encoding(x, *, axis, feature_dim):
    """x plus RETURNN's sinusoidal signal (TF's positional_encoding layer):
    channel c < C/2 is sin(t * s_c), channel C/2 + c is cos(t * s_c), with
    s_c = exp(-c * log(1e4) / (C/2 - 1))."""
    half = feature_dim.dimension // 2
    inv_timescales = numpy.exp(numpy.arange(half, dtype="float64") * -(math.log(1.0e4) / (half - 1)))
    half_dim = Dim(half, name="pos_half")
    scales = rf.convert_to_tensor(inv_timescales.astype("float32"), dims=[half_dim])
    scaled = rf.cast(rf.range_over_dim(axis), "float32") * scales
    signal, _ = rf.concat((rf.sin(scaled), half_dim), (rf.cos(scaled), half_dim), out_dim=feature_dim)
    return x + signal


def _pos_encoding_at(x, t, *, feature_dim):
    """x (a frame) plus the signal _pos_encoding adds at position t."""
    half = feature_dim.dimension // 2
    inv_timescales = numpy.exp(numpy.arange(half, dtype="float64") * -(math.log(1.0e4) / (half - 1)))
    half_dim = Dim(half, name="pos_half")
    scales = rf.convert_to_tensor(inv_timescales.astype("float32"), dims=[half_dim], device=x.device)
    scaled = rf.convert_to_tensor(numpy.float32(t), device=x.device) * scales
    signal, _ = rf.concat((rf.sin(scaled), half_dim), (rf.cos(scaled), half_dim), out_dim=feature_dim)
    return x + signal
)py";

bool is_identifier_char(char c) { return absl::ascii_isalnum(c) || c == '_'; }

// Whether `text` names `name` as a whole word.
bool mentions(absl::string_view text, absl::string_view name) {
  for (size_t pos = text.find(name); pos != absl::string_view::npos;
       pos = text.find(name, pos + 1)) {
    const size_t end = pos + name.size();
    if ((pos == 0 || !is_identifier_char(text[pos - 1])) &&
        (end == text.size() || !is_identifier_char(text[end])))
      return true;
  }
  return false;
}

// The helpers (kHelpers) that `code` calls, and those they call, in their
// order: a config carries no helper it does not use.
std::string used_helpers(absl::string_view code) {
  struct Helper {
    std::string name;
    absl::string_view text;
  };
  std::vector<Helper> helpers;
  for (absl::string_view block : absl::StrSplit(absl::string_view(kHelpers), "\n\n\n")) {
    block = absl::StripLeadingAsciiWhitespace(block);
    absl::string_view head = block;
    for (absl::string_view prefix : {"def ", "class "}) absl::ConsumePrefix(&head, prefix);
    size_t end = 0;
    while (end < head.size() && is_identifier_char(head[end])) ++end;
    helpers.push_back({std::string(head.substr(0, end)), block});
  }
  std::vector<bool> used(helpers.size(), false);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t i = 0; i < helpers.size(); ++i) {
      if (used[i]) continue;
      bool wanted = mentions(code, helpers[i].name);
      for (size_t j = 0; j < helpers.size() && !wanted; ++j) {
        wanted = used[j] && j != i && mentions(helpers[j].text, helpers[i].name);
      }
      if (wanted) used[i] = changed = true;
    }
  }
  std::string out;
  for (size_t i = 0; i < helpers.size(); ++i) {
    if (used[i]) absl::StrAppend(&out, out.empty() ? "\n" : "\n\n\n", helpers[i].text);
  }
  return out;
}

}  // namespace

absl::StatusOr<bool> legalize(ir::Graph& g) {
  for (const ir::Node& n : g.nodes()) {
    if (n.kind == ir::NodeKind::kRawLayer) {
      return ir::user_error(n,
                            "a raw RETURNN layer is a layer of TF's net dict: the torch target has "
                            "none (the tf target: --backend tf)");
    }
    std::string why = not_lowered(n);
    if (!why.empty()) {
      return ir::user_error(n, absl::StrCat("the torch target does not lower ", why,
                                            " yet (the tf target does: --backend tf)"));
    }
    if (n.kind == ir::NodeKind::kParam) {
      const ir::Param& p = g.param(n.param);
      if (std::string o = unsupported_option(p); !o.empty()) {
        return ir::user_error(p.loc, absl::StrCat("param '", p.path,
                                                  "': the torch target does not "
                                                  "support ",
                                                  o));
      }
    }
  }
  return false;
}

absl::StatusOr<bool> naming(ir::Graph& g) {
  bool changed = false;
  for (size_t i = 0; i < g.size(); ++i) {
    if (!g.nodes()[i].name.empty()) continue;
    g.set_name(g.id_of(i), absl::StrCat("n", i, "_", node_kind_name(g.nodes()[i].kind)));
    changed = true;
  }
  return changed;
}

namespace {

// train_step's body for `g`: the step stage, the losses as RETURNN's run
// context wants them, the marked outputs as its result.
std::string train_step_body(const ir::Graph& g, const ir::DimTable& t,
                            const ir::LoopAnalysis& loops, bool any_coupled) {
  std::string out = step_code(g, t, loops);
  out += "    ctx = rf.get_run_ctx()\n";
  if (any_coupled) {
    out += "    ctx.mark_as_loss(_coupled_weight_decay(model, _param_options), \"weight_decay\")\n";
  }
  for (const ir::Mark& m : g.marks()) {
    if (m.kind != ir::Mark::Kind::kLoss) continue;
    const ir::Node& n = g.node(m.node);
    std::string options;
    if (const double* s = n.attrs.find<ir::attr::Scale>())
      absl::StrAppend(&options, ", scale=", PyValue(*s).repr());
    if (const bool* z = n.attrs.find<ir::attr::Normalize>(); z && *z)
      absl::StrAppend(&options, ", use_normalized_loss=True");
    const std::string error_name = PyValue(m.name + "_error").repr();
    if (n.kind == ir::NodeKind::kCrossEntropy) {
      // Per frame; RETURNN reports it per target frame, as TF does.
      absl::StrAppend(&out, "    ctx.mark_as_loss(", n.name, ", ", PyValue(m.name).repr(), options,
                      ")\n");
      const ir::Node& targets = g.node(n.inputs[1]);
      absl::StrAppend(&out, "    ctx.mark_as_loss(_frame_error(", g.node(n.inputs[0]).name, ", ",
                      targets.name, ", ", t.id(*targets.type.sparse_dim), "), ", error_name,
                      ", as_error=True)\n");
    } else if (n.kind == ir::NodeKind::kCtcLoss) {
      // Per sequence; reported per target label, as TF does; the error is
      // the greedy decoding's edits per target label.
      const ir::Node& targets = g.node(n.inputs[1]);
      const std::string norm = absl::StrCat(
          ", custom_inv_norm_factor=", t.id(targets_axis(targets.type)), ".get_size_tensor()");
      absl::StrAppend(&out, "    ctx.mark_as_loss(", n.name, ", ", PyValue(m.name).repr(), norm,
                      options, ")\n");
      absl::StrAppend(&out, "    ctx.mark_as_loss(_ctc_error(", g.node(n.inputs[0]).name, ", ",
                      targets.name, ", axis=", t.id(n.attrs.get<ir::attr::Axis>()),
                      ", targets_axis=", t.id(targets_axis(targets.type)),
                      ", classes=", t.id(class_dim(g, n)), "), ", error_name, norm,
                      ", as_error=True)\n");
    } else {  // regression and custom losses: their value as it is
      if (const bool* e = n.attrs.find<ir::attr::AsError>(); e && *e) options += ", as_error=True";
      absl::StrAppend(&out, "    ctx.mark_as_loss(", n.name, ", ", PyValue(m.name).repr(), options,
                      ")\n");
    }
  }
  // The marked outputs: RETURNN ignores train_step's result; tests and tools read it.
  PyValue outputs = PyValue::dict();
  for (const ir::Mark& m : g.marks()) {
    if (m.kind == ir::Mark::Kind::kOutput)
      outputs.append(m.name, PyValue::ref(g.node(m.node).name));
  }
  absl::StrAppend(&out, "    return ", outputs.repr(), "\n");
  return out;
}

}  // namespace

absl::StatusOr<std::string> write_config(const ir::Graph& g, const ConfigOptions& opts) {
  return write_config(std::vector<StageGraph>{{1, &g}}, opts);
}

absl::StatusOr<std::string> write_config(const std::vector<StageGraph>& stages,
                                         const ConfigOptions& opts) {
  const ir::Graph& g = *stages.back().graph;
  ir::DimTable t(g);
  // Earlier pretraining stages: their dims take the last stage's names where they match.
  std::vector<std::unique_ptr<ir::DimTable>> stage_dims;
  for (size_t s = 0; s + 1 < stages.size(); ++s)
    stage_dims.push_back(std::make_unique<ir::DimTable>(*stages[s].graph, &t));
  std::string out = config_header(g, opts);
  const Task task = opts.task.task;
  const bool forward = task == Task::kForward || task == Task::kSearch;
  out +=
      "import math\n\nimport numpy\nimport torch\n\nimport returnn.frontend as rf\n"
      "from returnn.tensor import Dim, batch_dim\n";
  if (forward) out += "from returnn.forward_iface import ForwardCallbackIface\n";
  out += "\n";
  out += format_assignment("backend", "torch");
  out += format_assignment("behavior_version", kBehaviorVersion);
  // Search on RETURNN's torch engine is its forward task with a forward_step
  // that decodes (RETURNN's "search" task is TF only).
  out += format_assignment("task", std::string(task_name(forward ? Task::kForward : task)));
  out += format_assignment("device", opts.device);
  out += beam_entry(opts);
  // "same" padding with strides as TF pads (the total k - 1 - (n - 1) % s,
  // the extra frame on the right), not rf's newer length-independent padding.
  out += format_assignment("rf_use_consistent_same_padding", false);
  out += "\n";
  for (const ir::Dim& d : t.dims()) out += format_assignment(t.id(d), dim_definition(t, d));
  for (const auto& st : stage_dims) {
    for (size_t i = 0; i < st->dims().size(); ++i) {
      const ir::Dim& d = st->dims()[i];
      if (!st->from_base(i)) out += format_assignment(st->id(d), dim_definition(*st, d));
    }
  }
  // Later occurrences of a dim in one type (square weights), and their dims
  // (by identifier: once over all stages).
  std::vector<std::string> occurrence_ids;
  std::vector<PyValue> primed;
  auto note_occurrences = [&](const ir::DimTable& tab, const std::vector<ir::Dim>& dims) {
    for (size_t i = 0; i < dims.size(); ++i) {
      int k = 1;
      for (size_t j = 0; j < i; ++j) k += dims[j] == dims[i];
      if (k == 1) continue;
      const ir::Dim& d = dims[i];
      const std::string id = occurrence_id(tab, d, k);
      if (std::find(occurrence_ids.begin(), occurrence_ids.end(), id) != occurrence_ids.end())
        continue;
      occurrence_ids.push_back(id);
      out += format_assignment(
          id, PyValue::call("Dim", {d.size() ? PyValue(*d.size()) : PyValue::none()},
                            {{"name", absl::StrCat(d.name(), "__", k)}}));
      primed.push_back(PyValue::tuple({PyValue::ref(id), PyValue::ref(tab.id(d))}));
    }
  };
  auto note_graph = [&](const ir::Graph& gr, const ir::DimTable& tab) {
    for (const ir::Param& p : gr.params()) note_occurrences(tab, p.dims);
    for (const ir::Node& n : gr.nodes()) note_occurrences(tab, n.type.dims);
  };
  note_graph(g, t);
  for (size_t s = 0; s < stage_dims.size(); ++s) note_graph(*stages[s].graph, *stage_dims[s]);
  out += "\n";
  out += format_assignment("_primed", PyValue::list(std::move(primed)));
  out += "\n";
  std::vector<bool> is_target(g.size(), false);
  for (const ir::Node& n : g.nodes()) {
    if (int k = ir::kind_facts(n.kind).target_input; k >= 0) is_target[n.inputs[k].index] = true;
  }
  PyValue extern_data = PyValue::dict();
  for (size_t i = 0; i < g.size(); ++i) {
    const ir::Node& n = g.nodes()[i];
    if (n.kind != ir::NodeKind::kData) continue;
    PyValue d = PyValue::dict(
        {{"dims", dims_value(t, n.type.dims)}, {"dtype", std::string(dtype_name(n.type.dtype))}});
    if (n.type.sparse_dim) d.set("sparse_dim", dim_ref(t, *n.type.sparse_dim));
    // Dense data's static last dim as its feature dim: RETURNN's dataset API
    // (DummyGenericDataset's data_template) reads the data's dimension.
    if (!n.type.sparse_dim && !n.type.dims.empty() && n.type.dims.back().is_feature_like() &&
        n.type.dims.back().size())
      d.set("feature_dim", dim_ref(t, n.type.dims.back()));
    const std::string& key = n.attrs.get<ir::attr::Key>();
    if (key != "data" && !is_target[i]) d.set("available_for_inference", true);
    extern_data.append(key, std::move(d));
  }
  out += format_assignment("extern_data", extern_data);
  const size_t helpers_at = out.size();  // the used helpers go here, once the code is known
  // The param options RETURNN's torch engine has no config entry for.
  PyValue param_options = PyValue::dict();
  bool any_lr_multiplier = false, any_coupled = false, any_hooked = false;
  for (const ir::Param& p : g.params()) {
    const ir::ParamOptions& o = p.options;
    PyValue opts = PyValue::dict();
    if (o.weight_decay.value != 0.0) {
      opts.set(o.weight_decay.coupled ? "coupled_weight_decay" : "decoupled_weight_decay",
               o.weight_decay.value);
      any_coupled |= o.weight_decay.coupled;
      any_hooked |= !o.weight_decay.coupled;
    }
    if (o.lr_multiplier != 1.0) {
      opts.set("learning_rate_multiplier", o.lr_multiplier);
      any_lr_multiplier = true;
    }
    if (o.gradient_clip != 0.0) {
      opts.set("gradient_clip", o.gradient_clip);
      any_hooked = true;
    }
    if (!opts.items().empty()) param_options.append(p.path, std::move(opts));
  }
  out += "\n\n";
  out += format_assignment("_param_options", param_options);
  // The model: its params at their paths; the param-init stage, once.
  out += "\n\nclass Model(rf.Module):\n";
  out += "    \"\"\"The model's params, with their initial values.\"\"\"\n\n";
  out += "    def __init__(self):\n        super().__init__()\n";
  for (const ir::Param& p : g.params()) {
    absl::StrAppend(
        &out, "        _add_param(self, ", PyValue(p.path).repr(), ", rf.Parameter(",
        dims_value(t, p.dims).repr(),
        p.dtype == ir::DType::kFloat32
            ? std::string()
            : absl::StrCat(", dtype=", PyValue(std::string(dtype_name(p.dtype))).repr()),
        "))\n");
  }
  for (const ir::Node& n : g.nodes()) {
    if (n.stage != ir::Stage::kParamInit) continue;
    absl::StrAppend(&out, "        ", n.name, " = ", value_of(g, t, n, "self"), "\n");
  }
  for (const ir::Param& p : g.params()) {
    const ir::ParamOptions& o = p.options;
    if (!o.trainable) {
      absl::StrAppend(&out, "        _param(self, ", PyValue(p.path).repr(),
                      ").trainable = False\n");
    }
    absl::StrAppend(
        &out, "        _param(self, ", PyValue(p.path).repr(), ").initial = ",
        o.init_node >= 0 ? g.node(ir::NodeId{o.init_node}).name : PyValue(o.initial.value).repr(),
        "\n");
  }
  if (any_hooked) out += "        _apply_param_options(self, _param_options)\n";
  out += "\n\ndef get_model(**_kwargs):\n    return Model()\n\n";
  // The step stage, at every step; the losses as RETURNN's run context wants.
  ASSIGN_OR_RETURN(const ir::LoopAnalysis loops, ir::analyze_loops(g));
  if (forward) {
    // Forward and search: the marked value to RETURNN's forward callback.
    const ir::Node* value = task == Task::kForward
                                ? first_marked(g, ir::Mark::Kind::kOutput, "output")
                                : first_marked(g, ir::Mark::Kind::kSearch);
    if (!value) return absl::InternalError("a forward or search config without its output");
    out += "\ndef forward_step(*, model, extern_data, **_kwargs):\n";
    out += step_code(g, t, loops);
    absl::StrAppend(&out, "    rf.get_run_ctx().mark_as_output(", value->name, ", ",
                    PyValue(value->name).repr(), ", dims=_batch_major(", value->name, "))\n\n\n");
    PyValue callback;
    if (task == Task::kForward) {
      // As RETURNN's TF forward: the feature dim's size, or the classes' if sparse.
      const ir::TensorType& ty = value->type;
      int64_t dim = 0;
      for (const ir::Dim& d : ty.dims) dim = d.size().value_or(dim);
      if (ty.sparse_dim) dim = ty.sparse_dim->size().value_or(0);
      callback = PyValue::call("_HdfWriter", {opts.task.output_file, value->name, dim,
                                              static_cast<int64_t>(ty.dims.size()) - 1});
    } else {
      callback = PyValue::call("_SearchWriter", {opts.task.output_file, value->name});
    }
    out += training_entries(opts, {});
    out += task_entries(opts, {{"forward_data", opts.task.data}, {"forward_callback", callback}});
    out.insert(helpers_at, used_helpers(absl::string_view(out).substr(helpers_at)));
    return out;
  }
  if (stages.size() == 1) {
    out += "\ndef train_step(*, model, extern_data, **_kwargs):\n";
    out += train_step_body(g, t, loops, any_coupled);
  } else {
    // Pretraining stages: the model holds the last stage's params (every
    // stage's are among them); each epoch runs its stage's step.
    std::vector<PyValue> steps;
    for (size_t s = 0; s < stages.size(); ++s) {
      const bool last = s + 1 == stages.size();
      const ir::Graph& sg = last ? g : *stages[s].graph;
      ASSIGN_OR_RETURN(const ir::LoopAnalysis sl, ir::analyze_loops(sg));
      const std::string name = absl::StrCat("_train_step_stage", s);
      absl::StrAppend(&out, "\ndef ", name, "(model, extern_data):\n");
      out += train_step_body(sg, last ? t : *stage_dims[s], last ? loops : sl, any_coupled);
      out += "\n";
      steps.push_back(PyValue::ref(name));
    }
    out += "\n";
    out += stage_selector(stages);
    out += "\n\ndef train_step(*, model, extern_data, **_kwargs):\n";
    out += "    \"\"\"The step of the pretraining stage that trains this epoch.\"\"\"\n";
    absl::StrAppend(&out, "    return ", PyValue::list(std::move(steps)).repr(),
                    "[_stage_of(rf.get_run_ctx().epoch)](model, extern_data)\n");
  }
  out += "\n\n";
  ConfigOptions own = opts;
  PyValue& optimizer = own.training.optimizer;
  // TF1's names for torch's optimizers (the rest are the same name on both).
  if (const PyValue* cls = optimizer.get("class"); cls && cls->repr() == "\"gradientdescent\"")
    optimizer.set("class", "sgd");
  if (any_lr_multiplier) optimizer.set("param_groups_custom", PyValue::ref("_param_groups"));
  out += training_entries(own, {});
  out += task_entries(own, {});
  out.insert(helpers_at, used_helpers(absl::string_view(out).substr(helpers_at)));
  return out;
}

}  // namespace retc::emit::torch
