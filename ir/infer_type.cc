// Type inference: the output type of a node from its kind, inputs and
// attributes (infer_type, graph.h), shared by the factory and the verifier.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "ir/graph.h"
#include "ir/status_macros.h"
#include "nlohmann/json.hpp"

namespace retc::ir {
namespace {

absl::Status arity(NodeKind kind, const std::vector<NodeId>& inputs, size_t n) {
  if (inputs.size() == n) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(node_kind_name(kind), " expects ", n, " inputs, got ", inputs.size()));
}

absl::StatusOr<TensorType> require_float(const TensorType& t, absl::string_view what) {
  if (!is_floating(t.dtype) || t.sparse_dim) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " must be a dense float tensor, got ", t.describe()));
  }
  return t;
}

absl::StatusOr<TensorType> infer_elementwise(const Graph& g, NodeKind kind,
                                             const std::vector<NodeId>& in) {
  const TensorType& a = g.node(in[0]).type;
  const TensorType& b = g.node(in[1]).type;
  if (a.dtype != b.dtype || a.sparse_dim || b.sparse_dim) {
    return absl::InvalidArgumentError(absl::StrCat(node_kind_name(kind), ": operands ",
                                                   a.describe(), " and ", b.describe(),
                                                   " do not combine"));
  }
  const bool logical = kind == NodeKind::kLogicalAnd || kind == NodeKind::kLogicalOr;
  if (logical != (a.dtype == DType::kBool)) {
    return absl::InvalidArgumentError(
        absl::StrCat(node_kind_name(kind), ": operands ", a.describe(), " and ", b.describe(),
                     logical ? " must be bool" : " must not be bool"));
  }
  TensorType out = a;
  for (const Dim& d : b.dims) {
    if (index_of(out.dims, d) < 0) out.dims.push_back(d);
  }
  return out;
}

absl::StatusOr<TensorType> infer_dot(const Graph& g, const std::vector<NodeId>& in,
                                     const NodeSpec& spec) {
  const auto& reduce = spec.attrs.get<attr::Reduce>();
  const TensorType& a = g.node(in[0]).type;
  const TensorType& b = g.node(in[1]).type;
  RETURN_IF_ERROR(require_float(a, "dot operand").status());
  RETURN_IF_ERROR(require_float(b, "dot operand").status());
  if (reduce.empty()) return absl::InvalidArgumentError("dot: reduce must name at least one dim");
  for (const Dim& r : reduce) {
    if (index_of(a.dims, r) < 0 || index_of(b.dims, r) < 0) {
      return absl::InvalidArgumentError(absl::StrCat("dot: reduce dim ", r.describe(),
                                                     " must be in both operands, got ",
                                                     a.describe(), " and ", b.describe()));
    }
  }
  // A dim may occur twice in one operand (a square weight [h, h]); reduce
  // contracts its first occurrence in each operand, like RETURNN's matching
  // with the first occurrence marked by a higher match_priority.
  auto drop_first = [&](std::vector<Dim> dims) {
    for (const Dim& r : reduce) dims.erase(dims.begin() + index_of(dims, r));
    return dims;
  };
  if (a.dtype != b.dtype) {
    return absl::InvalidArgumentError(
        absl::StrCat("dot: operands ", a.describe(), " and ", b.describe(), " differ in dtype"));
  }
  TensorType out{drop_first(a.dims), a.dtype, std::nullopt};
  for (const Dim& d : drop_first(b.dims)) {
    if (index_of(out.dims, d) < 0) out.dims.push_back(d);
  }
  return out;
}

absl::StatusOr<TensorType> infer_lstm(const Graph& g, const std::vector<NodeId>& in,
                                      const NodeSpec& spec) {
  const auto& axis = spec.attrs.get<attr::Axis>();
  const auto& out_dim = spec.attrs.get<attr::OutDim>();
  const auto& direction = spec.attrs.get<attr::Direction>();
  if (direction != 1 && direction != -1) {
    return absl::InvalidArgumentError("lstm: direction must be 1 (forward) or -1 (backward)");
  }
  if (in.size() != 4 && in.size() != 6)
    return absl::InvalidArgumentError("lstm: needs x, W, W_re, b and optionally h0, c0");
  const TensorType& x = g.node(in[0]).type;
  RETURN_IF_ERROR(require_float(x, "lstm input").status());
  const TensorType& w = g.node(in[1]).type;
  const TensorType& w_re = g.node(in[2]).type;
  const TensorType& b = g.node(in[3]).type;
  const Dim gates = 4 * out_dim;
  if (w.dims.size() != 2 || w.dims[1] != gates) {
    return absl::InvalidArgumentError(
        absl::StrCat("lstm: W must be [in, 4*out], got ", describe(w.dims)));
  }
  if (w_re.dims != std::vector<Dim>{out_dim, gates}) {
    return absl::InvalidArgumentError(
        absl::StrCat("lstm: W_re must be [out, 4*out], got ", describe(w_re.dims)));
  }
  if (b.dims != std::vector<Dim>{gates}) {
    return absl::InvalidArgumentError(
        absl::StrCat("lstm: b must be [4*out], got ", describe(b.dims)));
  }
  const Dim& in_dim = w.dims[0];
  int in_pos = index_of(x.dims, in_dim);
  if (in_pos < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("lstm: input ", x.describe(), " lacks the in dim ", in_dim.describe()));
  }
  if (index_of(x.dims, axis) < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("lstm: input ", x.describe(), " lacks the loop axis ", axis.describe()));
  }
  if (out_dim != in_dim && index_of(x.dims, out_dim) >= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "lstm: input ", x.describe(), " already has the out dim ", out_dim.describe()));
  }
  TensorType out = x;
  out.dims[in_pos] = out_dim;
  // The initial state: the output's dims without the axis.
  for (size_t k = 4; k < in.size(); ++k) {
    const TensorType& s = g.node(in[k]).type;
    bool same = s.dtype == DType::kFloat32 && !s.sparse_dim && s.dims.size() + 1 == out.dims.size();
    for (const Dim& d : s.dims) same = same && d != axis && index_of(out.dims, d) >= 0;
    if (!same) {
      return absl::InvalidArgumentError(absl::StrCat("lstm: the initial ", k == 4 ? "h" : "c", " ",
                                                     s.describe(), " must have the output's dims ",
                                                     describe(out.dims), " without the axis"));
    }
  }
  return out;
}

absl::StatusOr<TensorType> infer_lstm_final(const Graph& g, const std::vector<NodeId>& in,
                                            const NodeSpec& spec) {
  const auto& state = spec.attrs.get<attr::State>();
  const Node& lstm = g.node(in[0]);
  if (lstm.kind != NodeKind::kLstm || (state != "h" && state != "c"))
    return absl::InvalidArgumentError("lstm_final: the state \"h\" or \"c\" of an lstm node");
  TensorType out = lstm.type;
  const Dim axis = lstm.attrs.get<attr::Axis>();
  out.dims.erase(out.dims.begin() + index_of(out.dims, axis));
  return out;
}

// `dims` without the first occurrence of each of `axes`; error if one is missing.
absl::StatusOr<std::vector<Dim>> without(const TensorType& t, const std::vector<Dim>& axes,
                                         absl::string_view what) {
  std::vector<Dim> dims = t.dims;
  for (const Dim& a : axes) {
    int i = index_of(dims, a);
    if (i < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": axis ", a.describe(), " is not in ", t.describe()));
    }
    dims.erase(dims.begin() + i);
  }
  return dims;
}

absl::StatusOr<TensorType> infer_gather(const Graph& g, const std::vector<NodeId>& in,
                                        const NodeSpec& spec) {
  const auto& axis = spec.attrs.get<attr::Axis>();
  const TensorType& x = g.node(in[0]).type;
  const TensorType& idx = g.node(in[1]).type;
  if (!idx.sparse_dim || *idx.sparse_dim != axis) {
    return absl::InvalidArgumentError(absl::StrCat(
        "gather: indices ", idx.describe(), " must be sparse over the axis ", axis.describe()));
  }
  ASSIGN_OR_RETURN(auto rest, without(x, {axis}, "gather"));
  // Dims the indices share with x (the batch, ...) are batch dims of the
  // gather: each entry picks from its own slice.
  TensorType out{idx.dims, x.dtype, x.sparse_dim};
  for (const Dim& d : rest) {
    if (index_of(out.dims, d) < 0) out.dims.push_back(d);
  }
  return out;
}

absl::StatusOr<TensorType> infer_concat(const Graph& g, const std::vector<NodeId>& in,
                                        const NodeSpec& spec) {
  const auto& axis_a = spec.attrs.get<attr::AxisA>();
  const auto& axis_b = spec.attrs.get<attr::AxisB>();
  const auto& out_dim = spec.attrs.get<attr::OutDim>();
  const TensorType& a = g.node(in[0]).type;
  const TensorType& b = g.node(in[1]).type;
  if (out_dim != axis_a + axis_b) {
    return absl::InvalidArgumentError(
        absl::StrCat("concat: out_dim ", out_dim.describe(), " must be axis_a + axis_b"));
  }
  ASSIGN_OR_RETURN(auto rest_a, without(a, {axis_a}, "concat"));
  ASSIGN_OR_RETURN(auto rest_b, without(b, {axis_b}, "concat"));
  bool same = rest_a.size() == rest_b.size();
  for (const Dim& d : rest_a) same = same && index_of(rest_b, d) >= 0;
  if (!same || a.dtype != b.dtype || a.sparse_dim || b.sparse_dim) {
    return absl::InvalidArgumentError(absl::StrCat("concat: ", a.describe(), " and ", b.describe(),
                                                   " differ in more than the concatenated axis"));
  }
  TensorType out = a;
  out.dims[index_of(a.dims, axis_a)] = out_dim;
  return out;
}

absl::StatusOr<TensorType> infer_self_attention(const Graph& g, const std::vector<NodeId>& in,
                                                const NodeSpec& spec) {
  if (in.size() != 2 && in.size() != 3) {
    return absl::InvalidArgumentError(absl::StrCat(
        "self_attention expects 2 inputs (x, qkv) or 3 (x, qkv, rel-pos table), got ", in.size()));
  }
  const auto& axis = spec.attrs.get<attr::Axis>();
  const auto& heads = spec.attrs.get<attr::NumHeads>();
  const auto& key_dim = spec.attrs.get<attr::KeyDim>();
  const auto& out_dim = spec.attrs.get<attr::OutDim>();
  if (const double* r = spec.attrs.find<attr::AttDropout>(); r && !(*r >= 0 && *r < 1))
    return absl::InvalidArgumentError(
        absl::StrCat("self_attention: the attention dropout must be in [0, 1), got ", *r));
  const TensorType& x = g.node(in[0]).type;
  const TensorType& qkv = g.node(in[1]).type;
  RETURN_IF_ERROR(require_float(x, "self_attention input").status());
  if (heads < 1 || !key_dim.size() || !out_dim.size() || *key_dim.size() % heads != 0 ||
      *out_dim.size() % heads != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("self_attention: key dim ", key_dim.describe(), " and out dim ",
                     out_dim.describe(), " must be static and divisible by ", heads, " heads"));
  }
  const Dim qkv_dim = 2 * key_dim + out_dim;
  if (qkv.dims.size() != 2 || qkv.dims[1] != qkv_dim) {
    return absl::InvalidArgumentError(absl::StrCat(
        "self_attention: the QKV weight must be [in, 2*key + out], got ", describe(qkv.dims)));
  }
  int in_pos = index_of(x.dims, qkv.dims[0]);
  if (in_pos < 0) {
    return absl::InvalidArgumentError(absl::StrCat("self_attention: input ", x.describe(),
                                                   " lacks the in dim ", qkv.dims[0].describe()));
  }
  int dynamic = 0;
  for (const Dim& d : x.dims) dynamic += d.is_dynamic() && !d.is_batch();
  if (index_of(x.dims, axis) < 0 || !axis.is_dynamic() || dynamic != 1) {
    return absl::InvalidArgumentError(absl::StrCat("self_attention: the axis ", axis.describe(),
                                                   " must be the only dynamic dim of the input ",
                                                   x.describe()));
  }
  if (in.size() == 3) {
    // Shaw et al. relative positions: a learned [2*clipping + 1, key/heads]
    // table of offsets -clipping..clipping, added to the keys.
    const auto& clipping = spec.attrs.get<attr::Clipping>();
    const TensorType& table = g.node(in[2]).type;
    if (clipping < 1 || table.dims.size() != 2 || table.dims[0].size() != 2 * clipping + 1 ||
        table.dims[1].size() != *key_dim.size() / heads) {
      return absl::InvalidArgumentError(absl::StrCat(
          "self_attention: the relative position table must be [2*clipping + 1, "
          "key/heads] = [",
          2 * clipping + 1, ", ", *key_dim.size() / heads, "], got ", describe(table.dims)));
    }
  }
  TensorType out = x;
  out.dims[in_pos] = out_dim;
  return out;
}

// Optional loss attributes: scale > 0, label_smoothing in [0, 1).
absl::Status check_loss_options(const NodeSpec& spec) {
  if (const double* s = spec.attrs.find<attr::Scale>(); s && !(*s > 0)) {
    return absl::InvalidArgumentError(absl::StrCat("loss scale must be positive, got ", *s));
  }
  if (const double* e = spec.attrs.find<attr::LabelSmoothing>(); e && !(*e >= 0 && *e < 1)) {
    return absl::InvalidArgumentError(absl::StrCat("label smoothing must be in [0, 1), got ", *e));
  }
  if (const double* f = spec.attrs.find<attr::FocalLossFactor>(); f && !(*f >= 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("the focal loss factor must not be negative, got ", *f));
  }
  return absl::OkStatus();
}

absl::StatusOr<TensorType> infer_regression_loss(const Graph& g, const std::vector<NodeId>& in,
                                                 const NodeSpec& spec) {
  const auto& mode = spec.attrs.get<attr::Mode>();
  if (mode != "mse" && mode != "mean_l1") {
    return absl::InvalidArgumentError(absl::StrCat("regression_loss: unknown mode '", mode, "'"));
  }
  RETURN_IF_ERROR(check_loss_options(spec));
  const TensorType& pred = g.node(in[0]).type;
  const TensorType& target = g.node(in[1]).type;
  RETURN_IF_ERROR(require_float(pred, "regression_loss prediction").status());
  RETURN_IF_ERROR(require_float(target, "regression_loss target").status());
  bool same = pred.dims.size() == target.dims.size();
  for (const Dim& d : pred.dims) same = same && index_of(target.dims, d) >= 0;
  if (!same) {
    return absl::InvalidArgumentError(absl::StrCat("regression_loss: prediction ", pred.describe(),
                                                   " and target ", target.describe(),
                                                   " differ in dims"));
  }
  TensorType out{{}, DType::kFloat32, std::nullopt};
  for (const Dim& d : pred.dims) {
    if (!d.is_feature_like()) out.dims.push_back(d);
  }
  return out;
}

// `kind: parts...` as an InvalidArgument error.
template <class... Parts>
absl::Status kind_error(NodeKind kind, const Parts&... parts) {
  return absl::InvalidArgumentError(absl::StrCat(node_kind_name(kind), ": ", parts...));
}

// A loop node's loop id and axis: an id >= 0, a spatial axis.
absl::Status check_loop(NodeKind kind, const NodeSpec& spec, bool has_axis = true) {
  if (spec.attrs.get<attr::Loop>() < 0) return kind_error(kind, "loop ids are not negative");
  if (!has_axis) return absl::OkStatus();
  const Dim& axis = spec.attrs.get<attr::Axis>();
  if (axis.is_batch() || axis.is_feature_like())
    return kind_error(kind, "the loop axis ", axis.describe(), " must be a spatial dim");
  return absl::OkStatus();
}

absl::StatusOr<TensorType> infer_loop_next(const Graph& g, const std::vector<NodeId>& in,
                                           const NodeSpec& spec) {
  constexpr NodeKind kKind = NodeKind::kLoopNext;
  RETURN_IF_ERROR(check_loop(kKind, spec, /*has_axis=*/false));
  const int64_t loop = spec.attrs.get<attr::Loop>();
  const Node& state = g.node(in[0]);
  const TensorType& x = state.type;
  const TensorType& v = g.node(in[1]).type;
  if (state.kind != NodeKind::kLoopState || state.attrs.get<attr::Loop>() != loop)
    return kind_error(kKind, "the first input must be a state of loop ", loop);
  bool same = v.dims.size() == x.dims.size() && v.dtype == x.dtype && v.sparse_dim == x.sparse_dim;
  for (const Dim& d : v.dims) same = same && index_of(x.dims, d) >= 0;
  if (!same) {
    return kind_error(kKind, "the next value ", v.describe(),
                      " of a loop state must have the state's type ", x.describe());
  }
  return v;
}

absl::StatusOr<TensorType> infer_loop_unstack(const Graph& g, const std::vector<NodeId>& in,
                                              const NodeSpec& spec) {
  constexpr NodeKind kKind = NodeKind::kLoopUnstack;
  RETURN_IF_ERROR(check_loop(kKind, spec));
  const TensorType& x = g.node(in[0]).type;
  const Dim& axis = spec.attrs.get<attr::Axis>();
  const int pos = index_of(x.dims, axis);
  if (pos < 0)
    return kind_error(kKind, "the input ", x.describe(), " lacks the loop axis ", axis.describe());
  TensorType out = x;
  out.dims.erase(out.dims.begin() + pos);
  return out;
}

absl::StatusOr<TensorType> infer_loop_state(const Graph& g, const std::vector<NodeId>& in,
                                            const NodeSpec& spec) {
  constexpr NodeKind kKind = NodeKind::kLoopState;
  RETURN_IF_ERROR(check_loop(kKind, spec));
  const TensorType& x = g.node(in[0]).type;
  const Dim& axis = spec.attrs.get<attr::Axis>();
  // Exactly the state's dims (nn::Loop::state broadcasts the user's value).
  const auto& dims = spec.attrs.get<attr::DimsAttr>();
  bool same = x.dims.size() == dims.size();
  for (const Dim& d : x.dims) same = same && index_of(dims, d) >= 0;
  if (index_of(dims, axis) >= 0 || !same) {
    return kind_error(kKind, "the initial value ", x.describe(), " must have the state's dims ",
                      describe(dims), ", which lack the loop axis ", axis.describe());
  }
  TensorType out = x;
  out.dims = dims;
  return out;
}

// After the loop: the frames stacked along the axis (after the batch).
absl::StatusOr<TensorType> infer_loop_stack(const Graph& g, const std::vector<NodeId>& in,
                                            const NodeSpec& spec) {
  constexpr NodeKind kKind = NodeKind::kLoopStack;
  RETURN_IF_ERROR(check_loop(kKind, spec));
  const TensorType& x = g.node(in[0]).type;
  const Dim& axis = spec.attrs.get<attr::Axis>();
  if (index_of(x.dims, axis) >= 0)
    return kind_error(kKind, "the value ", x.describe(), " already has the axis ", axis.describe());
  TensorType out = x;
  size_t at = !out.dims.empty() && out.dims[0].is_batch() ? 1 : 0;
  out.dims.insert(out.dims.begin() + at, axis);
  return out;
}
// Dims of `a` followed by those of `b` not in `a` (broadcasting by identity).
std::vector<Dim> union_dims(const std::vector<Dim>& a, const std::vector<Dim>& b) {
  std::vector<Dim> out = a;
  for (const Dim& d : b) {
    if (index_of(out, d) < 0) out.push_back(d);
  }
  return out;
}

absl::StatusOr<TensorType> infer_range(const Graph& g, const std::vector<NodeId>& in,
                                       const NodeSpec& spec) {
  constexpr NodeKind kKind = NodeKind::kRange;
  const Dim& dim = spec.attrs.get<attr::DimAttr>();
  if (dim.is_batch()) return kind_error(kKind, "no range over the batch");
  if (dim.is_dynamic()) {
    // Positions along a dynamic axis: the input gives its lengths.
    RETURN_IF_ERROR(arity(kKind, in, 1));
    if (index_of(g.node(in[0]).type.dims, dim) < 0)
      return kind_error(kKind, "the input ", g.node(in[0]).type.describe(), " lacks the axis ",
                        dim.describe());
    return TensorType{{dim}, DType::kInt32, std::nullopt};
  }
  RETURN_IF_ERROR(arity(kKind, in, 0));
  return TensorType{{dim}, DType::kInt32, dim};
}

absl::StatusOr<TensorType> infer_compare(const Graph& g, const std::vector<NodeId>& in,
                                         const NodeSpec& spec) {
  constexpr NodeKind kKind = NodeKind::kCompare;
  const std::string& op = spec.attrs.get<attr::Op>();
  static const char* kOps[] = {"equal",      "not_equal", "less",
                               "less_equal", "greater",   "greater_equal"};
  if (std::find(std::begin(kOps), std::end(kOps), op) == std::end(kOps))
    return kind_error(kKind, "unknown op '", op, "'");
  const TensorType& a = g.node(in[0]).type;
  const TensorType& b = g.node(in[1]).type;
  if (a.dtype != b.dtype)
    return kind_error(kKind, "operands ", a.describe(), " and ", b.describe(), " differ in dtype");
  return TensorType{union_dims(a.dims, b.dims), DType::kBool, std::nullopt};
}

absl::StatusOr<TensorType> infer_cast(const Graph& g, const std::vector<NodeId>& in,
                                      const NodeSpec& spec) {
  const std::string& dtype = spec.attrs.get<attr::DType>();
  std::optional<DType> t = parse_dtype(dtype);
  if (!t) return kind_error(NodeKind::kCast, "unknown dtype '", dtype, "'");
  const TensorType& x = g.node(in[0]).type;
  const Dim* sparse = spec.attrs.find<attr::SparseDim>();
  if (sparse && ((*t != DType::kInt32 && *t != DType::kInt64) || x.dtype == DType::kBool ||
                 sparse->is_batch()))
    return kind_error(NodeKind::kCast, "indices into ", sparse->describe(),
                      " must be int32 or int64 from numbers, got ", x.describe(), " as ", dtype);
  return TensorType{x.dims, *t, sparse ? std::optional<Dim>(*sparse) : std::nullopt};
}

absl::StatusOr<TensorType> infer_where(const Graph& g, const std::vector<NodeId>& in) {
  constexpr NodeKind kKind = NodeKind::kWhere;
  const TensorType& c = g.node(in[0]).type;
  const TensorType& a = g.node(in[1]).type;
  const TensorType& b = g.node(in[2]).type;
  if (c.dtype != DType::kBool)
    return kind_error(kKind, "the condition ", c.describe(), " must be bool");
  if (a.dtype != b.dtype || a.sparse_dim != b.sparse_dim)
    return kind_error(kKind, "the branches ", a.describe(), " and ", b.describe(),
                      " differ in type");
  return TensorType{union_dims(union_dims(a.dims, b.dims), c.dims), a.dtype, a.sparse_dim};
}
// The size along an axis after a window of `window` (dilated) with `stride`:
// "same" keeps ceil(n / stride) positions, "valid" ceil((n - span + 1) / stride).
int64_t windowed_size(int64_t n, int64_t window, int64_t dilation, int64_t stride,
                      const std::string& padding) {
  int64_t span = (window - 1) * dilation + 1;
  int64_t len = padding == "same" ? n : n - span + 1;
  return len <= 0 ? 0 : (len + stride - 1) / stride;
}

// Checks the out axes of a windowed op (conv, pool) over `axes` of `x`.
// The size after a transposed convolution (defined below).
int64_t transposed_size(int64_t n, int64_t window, int64_t dilation, int64_t stride,
                        const std::string& padding);

// `size` gives an axis' size after the op (windowed_size: conv, pool, window;
// transposed_size: a transposed conv).
absl::Status check_windowed_axes(
    NodeKind kind, const TensorType& x, const std::vector<Dim>& axes,
    const std::vector<Dim>& out_axes, const std::vector<int64_t>& windows,
    const std::vector<int64_t>& strides, int64_t dilation, const std::string& padding,
    int64_t (*size)(int64_t, int64_t, int64_t, int64_t, const std::string&) = windowed_size) {
  auto err = [&](auto&&... parts) {
    return absl::InvalidArgumentError(absl::StrCat(node_kind_name(kind), ": ", parts...));
  };
  if (padding != "same" && padding != "valid")
    return err("padding must be \"same\" or \"valid\", got \"", padding, "\"");
  if (axes.empty() || axes.size() > 3 || out_axes.size() != axes.size() ||
      strides.size() != axes.size() || windows.size() != axes.size()) {
    return err("needs 1 to 3 spatial axes, with as many out axes, window sizes and strides");
  }
  if (dilation < 1) return err("dilation must be at least 1");
  for (size_t i = 0; i < axes.size(); ++i) {
    const Dim& a = axes[i];
    const Dim& o = out_axes[i];
    if (index_of(x.dims, a) < 0 || a.is_batch()) {
      return err("the spatial axis ", a.describe(), " is not in the input ", x.describe());
    }
    if (strides[i] < 1 || windows[i] < 1) return err("window sizes and strides must be positive");
    bool keeps = strides[i] == 1 && (padding == "same" || windows[i] == 1);
    if (a.size()) {
      int64_t want = size(*a.size(), windows[i], dilation, strides[i], padding);
      if (want < 1) return err("the axis ", a.describe(), " is shorter than the window");
      if (o.size() != want || (o != a && o.is_dynamic())) {
        return err("the out axis for ", a.describe(), " must be static of size ", want, ", got ",
                   o.describe());
      }
    } else if (keeps ? o != a : (o == a || !o.is_dynamic())) {
      return err("the out axis for the dynamic axis ", a.describe(), " must be ",
                 keeps ? "the same axis (stride 1, same padding)" : "a new dynamic dim", ", got ",
                 o.describe());
    }
    if (o != a && index_of(x.dims, o) >= 0)
      return err("the input ", x.describe(), " already has the out axis ", o.describe());
  }
  return absl::OkStatus();
}

absl::StatusOr<TensorType> infer_conv(const Graph& g, const std::vector<NodeId>& in,
                                      const NodeSpec& spec) {
  constexpr NodeKind kKind = NodeKind::kConv;
  const auto& axes = spec.attrs.get<attr::Axes>();
  const auto& out_axes = spec.attrs.get<attr::OutAxes>();
  const auto& strides = spec.attrs.get<attr::Strides>();
  const auto& dilation = spec.attrs.get<attr::Dilation>();
  const auto& padding = spec.attrs.get<attr::Padding>();
  const auto& groups = spec.attrs.get<attr::Groups>();
  const TensorType& x = g.node(in[0]).type;
  const TensorType& w = g.node(in[1]).type;
  const TensorType& b = g.node(in[2]).type;
  RETURN_IF_ERROR(require_float(x, "conv input").status());
  const size_t n = axes.size();
  if (w.dims.size() != n + 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "conv: the filter must be [", n, " kernel dims, in/groups, out], got ", describe(w.dims)));
  }
  std::vector<int64_t> windows;
  for (size_t i = 0; i < n; ++i) {
    if (!w.dims[i].size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("conv: kernel dims must be static, got ", describe(w.dims)));
    }
    windows.push_back(*w.dims[i].size());
  }
  RETURN_IF_ERROR(
      check_windowed_axes(kKind, x, axes, out_axes, windows, strides, dilation, padding));
  const Dim& out_dim = w.dims[n + 1];
  if (b.dims != std::vector<Dim>{out_dim}) {
    return absl::InvalidArgumentError(
        absl::StrCat("conv: the bias must be [out], got ", describe(b.dims)));
  }
  // The in dim: the filter's, or for groups > 1 the dim it divides.
  const Dim& w_in = w.dims[n];
  int in_pos = -1;
  if (groups == 1) {
    in_pos = index_of(x.dims, w_in);
  } else if (groups > 1 && w_in.op() == Dim::Op::kFloorDiv && w_in.factor() == groups) {
    const Dim& full = w_in.operands()[0];
    in_pos = index_of(x.dims, full);
    if (in_pos >= 0 && (*full.size() % groups != 0 || *out_dim.size() % groups != 0)) {
      return absl::InvalidArgumentError(absl::StrCat("conv: in ", full.describe(), " and out ",
                                                     out_dim.describe(), " must divide into ",
                                                     groups, " groups"));
    }
  } else {
    return absl::InvalidArgumentError(absl::StrCat("conv: with ", groups,
                                                   " groups the filter's in dim must be in // ",
                                                   groups, ", got ", w_in.describe()));
  }
  if (in_pos < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("conv: input ", x.describe(), " lacks the filter's in dim ", w_in.describe()));
  }
  TensorType out = x;
  out.dims[in_pos] = out_dim;
  for (size_t i = 0; i < n; ++i) out.dims[index_of(out.dims, (axes)[i])] = (out_axes)[i];
  return out;
}

absl::StatusOr<TensorType> infer_pool(const Graph& g, const std::vector<NodeId>& in,
                                      const NodeSpec& spec) {
  constexpr NodeKind kKind = NodeKind::kPool;
  const auto& mode = spec.attrs.get<attr::Mode>();
  if (mode != "max" && mode != "avg")
    return absl::InvalidArgumentError(absl::StrCat("pool: mode must be max or avg, got ", mode));
  const auto& axes = spec.attrs.get<attr::Axes>();
  const auto& out_axes = spec.attrs.get<attr::OutAxes>();
  const auto& size = spec.attrs.get<attr::Size>();
  const auto& strides = spec.attrs.get<attr::Strides>();
  const auto& padding = spec.attrs.get<attr::Padding>();
  ASSIGN_OR_RETURN(auto x, require_float(g.node(in[0]).type, "pool input"));
  // TF's "same" average leaves the tensor's padding out of the count but
  // not a shorter sequence's: results would depend on the batch.
  for (const Dim& a : axes) {
    if (mode == "avg" && padding == "same" && a.is_dynamic()) {
      return absl::InvalidArgumentError(
          absl::StrCat("pool: average pooling over the dynamic axis ", a.describe(),
                       " needs padding \"valid\" (with \"same\", the last window of a "
                       "sequence would count padding depending on the batch)"));
    }
  }
  RETURN_IF_ERROR(check_windowed_axes(kKind, x, axes, out_axes, size, strides, 1, padding));
  TensorType out = x;
  for (size_t i = 0; i < axes.size(); ++i) out.dims[index_of(out.dims, (axes)[i])] = (out_axes)[i];
  return out;
}

absl::StatusOr<TensorType> infer_masked_select(const Graph& g, const std::vector<NodeId>& in,
                                               const NodeSpec& spec) {
  const auto& axis = spec.attrs.get<attr::Axis>();
  const auto& out_dim = spec.attrs.get<attr::OutDim>();
  const TensorType& x = g.node(in[0]).type;
  const TensorType& mask = g.node(in[1]).type;
  const int pos = index_of(x.dims, axis);
  if (pos < 0 || !axis.is_dynamic() || axis.is_batch() || !out_dim.is_dynamic() ||
      out_dim.is_batch() || index_of(x.dims, out_dim) >= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("masked_select: the axis ", axis.describe(), " must be a dynamic axis of ",
                     x.describe(), " and the out dim ", out_dim.describe(), " a new dynamic dim"));
  }
  bool within = index_of(mask.dims, axis) >= 0;
  for (const Dim& d : mask.dims) within &= index_of(x.dims, d) >= 0;
  if (mask.dtype != DType::kBool || mask.sparse_dim || !within) {
    return absl::InvalidArgumentError(absl::StrCat("masked_select: the mask ", mask.describe(),
                                                   " must be bool over ", axis.describe(),
                                                   " and dims of ", x.describe()));
  }
  TensorType out = x;
  out.dims[pos] = out_dim;
  return out;
}

absl::StatusOr<TensorType> infer_repeat(const Graph& g, const std::vector<NodeId>& in,
                                        const NodeSpec& spec) {
  const auto& axis = spec.attrs.get<attr::Axis>();
  const auto& out_dim = spec.attrs.get<attr::OutDim>();
  const TensorType& x = g.node(in[0]).type;
  const TensorType& reps = g.node(in[1]).type;
  const int pos = index_of(x.dims, axis);
  if (pos < 0 || axis.is_batch() || !out_dim.is_dynamic() || out_dim.is_batch() ||
      index_of(x.dims, out_dim) >= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("repeat: the axis ", axis.describe(), " must be a spatial axis of ",
                     x.describe(), " and the out dim ", out_dim.describe(), " a new dynamic dim"));
  }
  bool within = true;
  for (const Dim& d : reps.dims) within &= d == axis || (d.is_batch() && index_of(x.dims, d) >= 0);
  if (reps.dtype != DType::kInt32 || reps.sparse_dim || !within) {
    return absl::InvalidArgumentError(absl::StrCat("repeat: the repetitions ", reps.describe(),
                                                   " must be int32, a scalar or over ",
                                                   axis.describe(), " (and the batch)"));
  }
  TensorType out = x;
  out.dims[pos] = out_dim;
  return out;
}

absl::StatusOr<TensorType> infer_length(const Graph& g, const std::vector<NodeId>& in,
                                        const NodeSpec& spec) {
  const TensorType& x = g.node(in[0]).type;
  const Dim& axis = spec.attrs.get<attr::Axis>();
  if (!axis.is_dynamic() || axis.is_batch() || index_of(x.dims, axis) < 0)
    return kind_error(NodeKind::kLength, "the axis ", axis.describe(),
                      " must be a dynamic axis of ", x.describe());
  return TensorType{{Dim::batch()}, DType::kInt32, std::nullopt};
}

absl::StatusOr<TensorType> infer_loop_end(const Graph& g, const std::vector<NodeId>& in,
                                          const NodeSpec& spec) {
  constexpr NodeKind kKind = NodeKind::kLoopEnd;
  RETURN_IF_ERROR(check_loop(kKind, spec, /*has_axis=*/false));
  const TensorType& x = g.node(in[0]).type;
  const Dim& axis = spec.attrs.get<attr::Axis>();
  const TensorType& max_len = g.node(in[1]).type;
  if (x.dtype != DType::kBool || x.sparse_dim || index_of(x.dims, axis) >= 0)
    return kind_error(kKind, "the end condition ", x.describe(), " must be a bool frame");
  if (max_len.dtype != DType::kInt32 || max_len.sparse_dim || !max_len.dims.empty())
    return kind_error(kKind, "the maximal length ", max_len.describe(), " must be a scalar int32");
  return x;
}

absl::StatusOr<TensorType> infer_choice(const Graph& g, const std::vector<NodeId>& in,
                                        const NodeSpec& spec) {
  constexpr NodeKind kKind = NodeKind::kChoice;
  RETURN_IF_ERROR(check_loop(kKind, spec, /*has_axis=*/false));
  const TensorType& x = g.node(in[0]).type;
  const Dim& dim = spec.attrs.get<attr::DimAttr>();
  ASSIGN_OR_RETURN(auto t, require_float(x, "choice input"));
  const int pos = index_of(t.dims, dim);
  if (pos < 0 || !dim.size())
    return kind_error(kKind, "the log-probs ", x.describe(), " lack the static label dim ",
                      dim.describe());
  t.dims.erase(t.dims.begin() + pos);
  t.dtype = DType::kInt32;
  t.sparse_dim = dim;
  return t;
}

absl::StatusOr<TensorType> infer_cum_concat(const Graph& g, const std::vector<NodeId>& in,
                                            const NodeSpec& spec) {
  constexpr NodeKind kKind = NodeKind::kCumConcat;
  RETURN_IF_ERROR(check_loop(kKind, spec, /*has_axis=*/false));
  const TensorType& x = g.node(in[0]).type;
  const Dim& axis = spec.attrs.get<attr::Axis>();
  const Dim& out_dim = spec.attrs.get<attr::OutDim>();
  if (index_of(x.dims, axis) >= 0 || index_of(x.dims, out_dim) >= 0 || !out_dim.is_dynamic() ||
      out_dim.is_batch()) {
    return kind_error(kKind, "a frame ", x.describe(), " of the loop over ", axis.describe(),
                      " accumulates along a new dynamic dim, not ", out_dim.describe());
  }
  TensorType out = x;
  const size_t at = !out.dims.empty() && out.dims[0].is_batch() ? 1 : 0;
  out.dims.insert(out.dims.begin() + at, out_dim);
  return out;
}
// The size along an axis after a transposed convolution (RETURNN's and
// Keras' deconv length): "valid" n * stride + max(window - stride, 0),
// "same" n * stride.
int64_t transposed_size(int64_t n, int64_t window, int64_t /*dilation*/, int64_t stride,
                        const std::string& padding) {
  return n * stride + (padding == "valid" ? std::max<int64_t>(window - stride, 0) : 0);
}

absl::StatusOr<TensorType> infer_transposed_conv(const Graph& g, const std::vector<NodeId>& in,
                                                 const NodeSpec& spec) {
  constexpr NodeKind kKind = NodeKind::kTransposedConv;
  const auto& axes = spec.attrs.get<attr::Axes>();
  const auto& out_axes = spec.attrs.get<attr::OutAxes>();
  const auto& strides = spec.attrs.get<attr::Strides>();
  const auto& padding = spec.attrs.get<attr::Padding>();
  auto err = [](auto&&... parts) {
    return absl::InvalidArgumentError(absl::StrCat("transposed_conv: ", parts...));
  };
  if (in.size() != 2 && in.size() != 3) return err("takes x, the filter and optionally a bias");
  const TensorType& x = g.node(in[0]).type;
  const TensorType& w = g.node(in[1]).type;
  RETURN_IF_ERROR(require_float(x, "transposed_conv input").status());
  const size_t n = axes.size();
  if (n == 0 || n > 2 || out_axes.size() != n || strides.size() != n)
    return err("needs 1 or 2 spatial axes, with as many out axes and strides");
  if (w.dims.size() != n + 2)
    return err("the filter must be [", n, " kernel dims, out, in], got ", describe(w.dims));
  const Dim& out_dim = w.dims[n];
  const Dim& in_dim = w.dims[n + 1];
  const int in_pos = index_of(x.dims, in_dim);
  if (in_pos < 0)
    return err("input ", x.describe(), " lacks the filter's in dim ", in_dim.describe());
  if (in.size() == 3 && g.node(in[2]).type.dims != std::vector<Dim>{out_dim})
    return err("the bias must be [out], got ", describe(g.node(in[2]).type.dims));
  std::vector<int64_t> windows;
  for (size_t i = 0; i < n; ++i) {
    const std::optional<int64_t> k = w.dims[i].size();
    if (!k) return err("kernel dims must be static, got ", describe(w.dims));
    // Torch's transposed convolution is shorter than TF's for a kernel
    // smaller than the stride: one rule on both targets.
    if (padding == "valid" && strides[i] >= 1 && *k < strides[i])
      return err("with \"valid\" padding the kernel (", *k, ") must be at least the stride (",
                 strides[i], ")");
    if (axes[i] == in_dim)
      return err("the spatial axis ", axes[i].describe(), " is the filter's in dim");
    windows.push_back(*k);
  }
  RETURN_IF_ERROR(
      check_windowed_axes(kKind, x, axes, out_axes, windows, strides, 1, padding, transposed_size));
  TensorType out = x;
  out.dims[in_pos] = out_dim;
  for (size_t i = 0; i < n; ++i) out.dims[index_of(out.dims, axes[i])] = out_axes[i];
  return out;
}

absl::StatusOr<TensorType> infer_logical_not(const Graph& g, const std::vector<NodeId>& in) {
  const TensorType& x = g.node(in[0]).type;
  if (x.dtype != DType::kBool || x.sparse_dim)
    return kind_error(NodeKind::kLogicalNot, "needs a bool input, got ", x.describe());
  return x;
}

// The position of the attr axis in the input: a non-batch axis; for the
// kinds that need it, of a dense input.
absl::StatusOr<int> array_axis(NodeKind kind, const TensorType& x, const NodeSpec& spec,
                               bool dense) {
  const Dim& axis = spec.attrs.get<attr::Axis>();
  const int pos = index_of(x.dims, axis);
  if (pos < 0 || axis.is_batch())
    return kind_error(kind, "the axis ", axis.describe(), " is not a non-batch axis of ",
                      x.describe());
  if (dense && x.sparse_dim) return kind_error(kind, "needs a dense input, got ", x.describe());
  return pos;
}

absl::StatusOr<TensorType> infer_cumsum(const Graph& g, const std::vector<NodeId>& in,
                                        const NodeSpec& spec) {
  const TensorType& x = g.node(in[0]).type;
  RETURN_IF_ERROR(array_axis(NodeKind::kCumsum, x, spec, /*dense=*/true).status());
  if (x.dtype == DType::kBool)
    return kind_error(NodeKind::kCumsum, "needs a number input, got ", x.describe());
  return x;
}

absl::StatusOr<TensorType> infer_log_cumsum_exp(const Graph& g, const std::vector<NodeId>& in,
                                                const NodeSpec& spec) {
  const TensorType& x = g.node(in[0]).type;
  RETURN_IF_ERROR(array_axis(NodeKind::kLogCumsumExp, x, spec, /*dense=*/true).status());
  if (!is_floating(x.dtype))
    return kind_error(NodeKind::kLogCumsumExp, "needs a float input, got ", x.describe());
  return x;
}

absl::StatusOr<TensorType> infer_edit_distance(const Graph& g, const std::vector<NodeId>& in,
                                               const NodeSpec& spec) {
  const TensorType& a = g.node(in[0]).type;
  const TensorType& b = g.node(in[1]).type;
  const Dim& axis_a = spec.attrs.get<attr::AxisA>();
  const Dim& axis_b = spec.attrs.get<attr::AxisB>();
  auto labels = [](const TensorType& t, const Dim& axis) {
    return t.dims.size() == 2 && t.dims[0].is_batch() && t.dims[1] == axis && axis.is_dynamic() &&
           (t.dtype == DType::kInt32 || t.dtype == DType::kInt64);
  };
  if (!labels(a, axis_a) || !labels(b, axis_b))
    return kind_error(NodeKind::kEditDistance, "needs int labels [batch, ", axis_a.describe(),
                      "] and [batch, ", axis_b.describe(), "], got ", a.describe(), " and ",
                      b.describe());
  return TensorType{{a.dims[0]}, DType::kInt32, std::nullopt};
}

absl::StatusOr<TensorType> infer_range_of_lengths(const Graph& g, const std::vector<NodeId>& in,
                                                  const NodeSpec& spec) {
  const TensorType& lengths = g.node(in[0]).type;
  const Dim& out_dim = spec.attrs.get<attr::OutDim>();
  if (lengths.dims.size() != 1 || !lengths.dims[0].is_batch() || lengths.dtype != DType::kInt32 ||
      lengths.sparse_dim)
    return kind_error(NodeKind::kRangeOfLengths, "the lengths must be int32 [B], got ",
                      lengths.describe());
  if (!out_dim.is_dynamic() || out_dim.is_batch())
    return kind_error(NodeKind::kRangeOfLengths, "the new dim ", out_dim.describe(),
                      " must be a dynamic spatial dim");
  return TensorType{{out_dim}, DType::kInt32, std::nullopt};
}

absl::StatusOr<TensorType> infer_scatter(const Graph& g, const std::vector<NodeId>& in,
                                         const NodeSpec& spec) {
  constexpr NodeKind kKind = NodeKind::kScatter;
  const TensorType& x = g.node(in[0]).type;
  const TensorType& idx = g.node(in[1]).type;
  const Dim& axis = spec.attrs.get<attr::Axis>();
  const std::string& mode = spec.attrs.get<attr::Mode>();
  if (!idx.sparse_dim || (idx.dtype != DType::kInt32 && idx.dtype != DType::kInt64))
    return kind_error(kKind, "needs int indices sparse over the out dim, got ", idx.describe());
  if (mode != "sum" && mode != "max" && mode != "min")
    return kind_error(kKind, "mode must be sum, max or min, got '", mode, "'");
  const Dim& out_dim = *idx.sparse_dim;
  if (index_of(idx.dims, axis) < 0 || index_of(x.dims, axis) < 0)
    return kind_error(kKind, "the values ", x.describe(), " and the indices ", idx.describe(),
                      " must both have the axis ", axis.describe());
  if (x.sparse_dim || x.dtype == DType::kBool)
    return kind_error(kKind, "needs numbers to scatter, got ", x.describe());
  if (index_of(x.dims, out_dim) >= 0 || index_of(idx.dims, out_dim) >= 0)
    return kind_error(kKind, "the out dim ", out_dim.describe(), " must be new to ", x.describe(),
                      " and ", idx.describe());
  // The indices' dims (the axis becomes the out dim), then x's others.
  TensorType out{idx.dims, x.dtype, std::nullopt};
  out.dims[index_of(idx.dims, axis)] = out_dim;
  for (const Dim& d : x.dims) {
    if (index_of(idx.dims, d) < 0) out.dims.push_back(d);
  }
  return out;
}

absl::StatusOr<TensorType> infer_param_assign(const Graph& g, const std::vector<NodeId>& in,
                                              const NodeSpec& spec) {
  constexpr NodeKind kKind = NodeKind::kParamAssign;
  const Node& param = g.node(in[0]);
  const TensorType& value = g.node(in[1]).type;
  const std::string& mode = spec.attrs.get<attr::Mode>();
  if (param.kind != NodeKind::kParam)
    return kind_error(kKind, "assigns a param (its param node), got a ",
                      node_kind_name(param.kind));
  if (mode != "assign" && mode != "add")
    return kind_error(kKind, "mode must be assign or add, got '", mode, "'");
  const TensorType& p = param.type;
  const bool same_dims = value.dims.size() == p.dims.size() &&
                         std::all_of(value.dims.begin(), value.dims.end(),
                                     [&](const Dim& d) { return index_of(p.dims, d) >= 0; });
  if (!same_dims || value.dtype != p.dtype || value.sparse_dim)
    return kind_error(kKind, "the value must have the param's dims and dtype ", p.describe(),
                      ", got ", value.describe());
  return TensorType{{}, DType::kInt32, std::nullopt};
}

absl::StatusOr<TensorType> infer_top_k(const Graph& g, const std::vector<NodeId>& in,
                                       const NodeSpec& spec) {
  constexpr NodeKind kKind = NodeKind::kTopK;
  const TensorType& x = g.node(in[0]).type;
  ASSIGN_OR_RETURN(const int pos, array_axis(kKind, x, spec, /*dense=*/true));
  const Dim& axis = spec.attrs.get<attr::Axis>();
  TensorType out = x;
  const auto& k_dim = spec.attrs.get<attr::KDim>();
  RETURN_IF_ERROR(require_float(x, "top_k input").status());
  if (!axis.size() || !k_dim.size() || k_dim.is_dynamic() || *k_dim.size() < 1 ||
      *k_dim.size() > *axis.size() || index_of(x.dims, k_dim) >= 0)
    return kind_error(kKind, "k_dim ", k_dim.describe(), " must be a new static dim of 1 to |",
                      axis.describe(), "| entries (a static axis)");
  out.dims[pos] = k_dim;
  if (spec.attrs.get<attr::Indices>()) {
    out.dtype = DType::kInt32;
    out.sparse_dim = axis;
  }
  return out;
}

absl::StatusOr<TensorType> infer_pad(const Graph& g, const std::vector<NodeId>& in,
                                     const NodeSpec& spec) {
  constexpr NodeKind kKind = NodeKind::kPad;
  const TensorType& x = g.node(in[0]).type;
  ASSIGN_OR_RETURN(const int pos, array_axis(kKind, x, spec, /*dense=*/false));
  const Dim& axis = spec.attrs.get<attr::Axis>();
  TensorType out = x;
  const auto& left = spec.attrs.get<attr::Left>();
  const auto& right = spec.attrs.get<attr::Right>();
  const auto& out_dim = spec.attrs.get<attr::OutDim>();
  if (left < 0 || right < 0) return kind_error(kKind, "the padding must not be negative");
  if (x.sparse_dim) {  // labels padded with a label, e.g. BOS before a sequence
    const double v = spec.attrs.get<attr::Value>();
    if (v != static_cast<double>(static_cast<int64_t>(v)) || v < 0 || !x.sparse_dim->size() ||
        v >= static_cast<double>(*x.sparse_dim->size()))
      return kind_error(kKind, "the value ", v, " that pads the labels ", x.describe(),
                        " must be one of their labels 0 .. ", x.sparse_dim->size().value_or(0) - 1);
  }
  if (axis.is_dynamic() ? !out_dim.is_dynamic() || out_dim == axis
                        : out_dim.size() != *axis.size() + left + right || out_dim.is_dynamic())
    return kind_error(kKind, "the out dim for ", axis.describe(), " padded by ", left, " and ",
                      right, " must be ",
                      axis.is_dynamic() ? "a new dynamic dim" : "static of that size", ", got ",
                      out_dim.describe());
  if (out_dim != axis && index_of(x.dims, out_dim) >= 0)
    return kind_error(kKind, "the input ", x.describe(), " already has ", out_dim.describe());
  out.dims[pos] = out_dim;
  return out;
}

absl::StatusOr<TensorType> infer_stack(const Graph& g, const std::vector<NodeId>& in,
                                       const NodeSpec& spec) {
  const auto& out_dim = spec.attrs.get<attr::OutDim>();
  if (in.empty()) return absl::InvalidArgumentError("stack needs at least one input");
  const TensorType& x = g.node(in[0]).type;
  for (NodeId i : in) {
    const TensorType& t = g.node(i).type;
    bool same =
        t.dims.size() == x.dims.size() && t.dtype == x.dtype && t.sparse_dim == x.sparse_dim;
    for (const Dim& d : t.dims) same = same && index_of(x.dims, d) >= 0;
    if (!same) {
      return absl::InvalidArgumentError(absl::StrCat("stack: the inputs ", x.describe(), " and ",
                                                     t.describe(), " differ in type"));
    }
  }
  if (out_dim.is_dynamic() || out_dim.size() != static_cast<int64_t>(in.size()) ||
      index_of(x.dims, out_dim) >= 0 || out_dim.is_batch())
    return absl::InvalidArgumentError(absl::StrCat("stack: the out dim ", out_dim.describe(),
                                                   " must be a new static dim of ", in.size(),
                                                   " entries (one per input)"));
  TensorType out = x;
  out.dims.push_back(out_dim);
  return out;
}

absl::StatusOr<TensorType> infer_window(const Graph& g, const std::vector<NodeId>& in,
                                        const NodeSpec& spec) {
  constexpr NodeKind kKind = NodeKind::kWindow;
  const auto& axis = spec.attrs.get<attr::Axis>();
  const auto& window_dim = spec.attrs.get<attr::WindowDim>();
  const auto& out_axis = spec.attrs.get<attr::OutAxis>();
  const auto& stride = spec.attrs.get<attr::Stride>();
  const auto& padding = spec.attrs.get<attr::Padding>();
  const TensorType& x = g.node(in[0]).type;
  if (x.sparse_dim)
    return absl::InvalidArgumentError(
        absl::StrCat("window: needs a dense input, got ", x.describe()));
  if (!window_dim.size() || window_dim.is_dynamic() || index_of(x.dims, window_dim) >= 0)
    return absl::InvalidArgumentError(absl::StrCat("window: the window dim ", window_dim.describe(),
                                                   " must be a new static dim"));
  RETURN_IF_ERROR(check_windowed_axes(kKind, x, {axis}, {out_axis}, {*window_dim.size()}, {stride},
                                      1, padding));
  TensorType out = x;
  const int pos = index_of(out.dims, axis);
  out.dims[pos] = out_axis;
  out.dims.insert(out.dims.begin() + pos + 1, window_dim);
  return out;
}

absl::StatusOr<TensorType> infer_raw_layer(const std::vector<NodeId>& in, const NodeSpec& spec) {
  const auto& layer = spec.attrs.get<attr::Layer>();
  const auto& out_dims = spec.attrs.get<attr::OutDims>();
  const auto& dtype_name = spec.attrs.get<attr::DType>();
  auto err = [](auto&&... parts) {
    return absl::InvalidArgumentError(absl::StrCat("raw_layer: ", parts...));
  };
  if (in.empty()) return err("needs at least one input");
  const nlohmann::json j = nlohmann::json::parse(layer, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("class") || !j["class"].is_string())
    return err("the layer must be a JSON object with a \"class\", got ", layer);
  if (j.contains("from")) return err("the layer's \"from\" is its inputs: leave it out");
  const std::optional<DType> dtype = parse_dtype(dtype_name);
  if (!dtype) return err("unknown dtype '", dtype_name, "'");
  TensorType out{out_dims, *dtype, std::nullopt};
  if (const Dim* s = spec.attrs.find<attr::SparseDim>()) out.sparse_dim = *s;
  return out;
}

absl::StatusOr<TensorType> infer_replace_dim(const Graph& g, const std::vector<NodeId>& in,
                                             const NodeSpec& spec) {
  const auto& axis = spec.attrs.get<attr::Axis>();
  const auto& out_dim = spec.attrs.get<attr::OutDim>();
  auto err = [](auto&&... parts) {
    return absl::InvalidArgumentError(absl::StrCat("replace_dim: ", parts...));
  };
  if (in.empty() || in.size() > 2) return err("takes x and optionally a tensor with the new dim");
  const TensorType& x = g.node(in[0]).type;
  const int pos = index_of(x.dims, axis);
  if (pos < 0 || axis.is_batch())
    return err("the axis ", axis.describe(), " is not a non-batch axis of ", x.describe());
  if (out_dim.is_batch() || (out_dim != axis && index_of(x.dims, out_dim) >= 0))
    return err("the input ", x.describe(), " already has ", out_dim.describe());
  if (in.size() == 2) {
    const TensorType& like = g.node(in[1]).type;
    if (index_of(like.dims, out_dim) < 0)
      return err("the tensor giving the new dim ", like.describe(), " lacks ", out_dim.describe());
  } else if (out_dim.is_dynamic() && !axis.is_dynamic()) {
    return err("the new dynamic dim ", out_dim.describe(),
               " needs the tensor that has it (its lengths)");
  }
  if (axis.is_dynamic() != out_dim.is_dynamic() ||
      (!axis.is_dynamic() && axis.size() != out_dim.size()))
    return err(axis.describe(), " and ", out_dim.describe(),
               " must both be dynamic or static of one size");
  TensorType out = x;
  out.dims[pos] = out_dim;
  if (out.sparse_dim == axis) out.sparse_dim = out_dim;
  return out;
}

absl::StatusOr<TensorType> infer_slice(const Graph& g, const std::vector<NodeId>& in,
                                       const NodeSpec& spec) {
  const auto& axis = spec.attrs.get<attr::Axis>();
  const auto& start = spec.attrs.get<attr::Start>();
  const auto& out_dim = spec.attrs.get<attr::OutDim>();
  const TensorType& x = g.node(in[0]).type;
  int pos = index_of(x.dims, axis);
  if (pos < 0 || !axis.size() || !out_dim.size() || start < 0 ||
      start + *out_dim.size() > *axis.size() || index_of(x.dims, out_dim) >= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "slice: [", start, ", ", start + out_dim.size().value_or(0), ") of ", axis.describe(),
        " into ", out_dim.describe(), " needs a static axis of the input ", x.describe(),
        " that holds the range, and a new static out dim"));
  }
  TensorType out = x;
  out.dims[pos] = out_dim;
  return out;
}

int64_t product(const std::vector<Dim>& dims) {
  int64_t p = 1;
  for (const Dim& d : dims) p *= d.size().value_or(-1);
  return p;
}

bool all_static(const std::vector<Dim>& dims) {
  return std::all_of(dims.begin(), dims.end(), [](const Dim& d) { return d.size().has_value(); });
}

absl::StatusOr<TensorType> infer_split_dims(const Graph& g, const std::vector<NodeId>& in,
                                            const NodeSpec& spec) {
  const auto& axis = spec.attrs.get<attr::Axis>();
  const auto& dims = spec.attrs.get<attr::DimsAttr>();
  const TensorType& x = g.node(in[0]).type;
  int pos = index_of(x.dims, axis);
  if (pos < 0 || !axis.size() || dims.size() < 2 || !all_static(dims) ||
      product(dims) != *axis.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("split_dims: ", axis.describe(), " of ", x.describe(), " cannot split into ",
                     describe(dims),
                     " (a static axis of the input, into 2 or more static dims "
                     "whose sizes multiply to its size)"));
  }
  TensorType out = x;
  out.dims.erase(out.dims.begin() + pos);
  for (const Dim& d : dims) {
    if (index_of(out.dims, d) >= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("split_dims: the input ", x.describe(), " already has ", d.describe()));
    }
  }
  out.dims.insert(out.dims.begin() + pos, dims.begin(), dims.end());
  return out;
}

absl::StatusOr<TensorType> infer_merge_dims(const Graph& g, const std::vector<NodeId>& in,
                                            const NodeSpec& spec) {
  const auto& axes = spec.attrs.get<attr::Axes>();
  const auto& out_dim = spec.attrs.get<attr::OutDim>();
  const TensorType& x = g.node(in[0]).type;
  if (axes.size() < 2 || !all_static(axes) || !out_dim.size() || product(axes) != *out_dim.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("merge_dims: ", describe(axes), " cannot merge into ", out_dim.describe(),
                     " (2 or more static axes whose sizes multiply to the out dim's size)"));
  }
  int pos = index_of(x.dims, (axes)[0]);
  ASSIGN_OR_RETURN(auto rest, without(x, axes, "merge_dims"));
  if (index_of(rest, out_dim) >= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("merge_dims: the input ", x.describe(), " already has ", out_dim.describe()));
  }
  TensorType out = x;
  out.dims = std::move(rest);
  out.dims.insert(out.dims.begin() + std::min<size_t>(pos, out.dims.size()), out_dim);
  return out;
}

absl::StatusOr<TensorType> infer_batch_norm(const Graph& g, const std::vector<NodeId>& in,
                                            const NodeSpec& spec) {
  const auto& axis = spec.attrs.get<attr::Axis>();
  ASSIGN_OR_RETURN(auto x, require_float(g.node(in[0]).type, "batch_norm input"));
  if (index_of(x.dims, axis) < 0 || !axis.is_feature_like()) {
    return absl::InvalidArgumentError(absl::StrCat("batch_norm: the axis ", axis.describe(),
                                                   " must be a feature dim of ", x.describe()));
  }
  const char* roles[] = {"mean", "variance", "scale", "bias"};
  for (size_t k = 1; k < 5; ++k) {
    if (g.node(in[k]).type.dims != std::vector<Dim>{axis}) {
      return absl::InvalidArgumentError(absl::StrCat("batch_norm: the ", roles[k - 1], " must be [",
                                                     axis.describe(), "], got ",
                                                     g.node(in[k]).type.describe()));
    }
  }
  return x;
}

absl::StatusOr<TensorType> infer_ctc_loss(const Graph& g, const std::vector<NodeId>& in,
                                          const NodeSpec& spec) {
  RETURN_IF_ERROR(check_loss_options(spec));
  const auto& axis = spec.attrs.get<attr::Axis>();
  ASSIGN_OR_RETURN(auto logits, require_float(g.node(in[0]).type, "ctc_loss logits"));
  const TensorType& targets = g.node(in[1]).type;
  if (!targets.sparse_dim) {
    return absl::InvalidArgumentError(
        absl::StrCat("ctc_loss: targets must be sparse class indices, got ", targets.describe()));
  }
  const Dim& classes = *targets.sparse_dim;
  int class_pos = -1;
  for (size_t i = 0; i < logits.dims.size(); ++i) {
    const Dim& d = logits.dims[i];
    if (d.op() == Dim::Op::kAdd && d.operands()[0] == classes && d.operands()[1].size() == 1)
      class_pos = static_cast<int>(i);
  }
  if (class_pos < 0) {
    return absl::InvalidArgumentError(absl::StrCat("ctc_loss: the logits ", logits.describe(),
                                                   " need the dim ", classes.describe(),
                                                   " + blank (a dim of size 1), the blank last"));
  }
  if (index_of(logits.dims, axis) < 0 || !axis.is_dynamic()) {
    return absl::InvalidArgumentError(absl::StrCat("ctc_loss: the input axis ", axis.describe(),
                                                   " must be a dynamic axis of the logits ",
                                                   logits.describe()));
  }
  ASSIGN_OR_RETURN(auto rest, without(logits, {axis, logits.dims[class_pos]}, "ctc_loss"));
  // RETURNN's TF CTC takes [batch, time, classes] only; torch's too.
  std::vector<Dim> extra;
  for (const Dim& d : rest) {
    if (!d.is_batch()) extra.push_back(d);
  }
  if (!extra.empty() || rest.size() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ctc_loss: the logits ", logits.describe(), " must have the batch, the axis ",
        axis.describe(), " and the classes + blank, nothing else",
        extra.empty() ? "" : absl::StrCat(" (merge or reduce ", describe(extra), " first)")));
  }
  return TensorType{std::move(rest), logits.dtype, std::nullopt};
}

absl::StatusOr<TensorType> infer_cross_entropy(const Graph& g, const std::vector<NodeId>& in,
                                               const NodeSpec& spec) {
  RETURN_IF_ERROR(check_loss_options(spec));
  const TensorType& logits = g.node(in[0]).type;
  const TensorType& targets = g.node(in[1]).type;
  RETURN_IF_ERROR(require_float(logits, "softmax_ce logits").status());
  if (!targets.sparse_dim) {
    return absl::InvalidArgumentError(absl::StrCat(
        "softmax_ce: targets must be sparse (class indices), got ", targets.describe()));
  }
  const Dim& classes = *targets.sparse_dim;
  if (index_of(logits.dims, classes) < 0) {
    return absl::InvalidArgumentError(absl::StrCat("softmax_ce: logits ", logits.describe(),
                                                   " lack the class dim ", classes.describe()));
  }
  for (const Dim& d : targets.dims) {
    if (index_of(logits.dims, d) < 0) {
      return absl::InvalidArgumentError(absl::StrCat("softmax_ce: targets dim ", d.describe(),
                                                     " is not in the logits ", logits.describe()));
    }
  }
  if (logits.dims.size() != targets.dims.size() + 1) {
    return absl::InvalidArgumentError(absl::StrCat("softmax_ce: logits ", logits.describe(),
                                                   " must be the targets' dims ",
                                                   describe(targets.dims), " plus the class dim"));
  }
  return TensorType{targets.dims, DType::kFloat32, std::nullopt};
}

// The shape of a constant or random numbers: static dims (seeded random
// numbers, initial values: `static_only`), or also the batch and dynamic
// dims, whose sizes an input gives.
absl::StatusOr<TensorType> filled_shape(const Graph& g, NodeKind kind,
                                        const std::vector<NodeId>& inputs, const NodeSpec& spec,
                                        bool static_only) {
  const auto& shape = spec.attrs.get<attr::Shape>();
  const std::string name(node_kind_name(kind));
  for (const Dim& d : shape) {
    if (static_only && (d.is_dynamic() || d.is_batch())) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, ": shape dim ", d.describe(), " must be static"));
    }
    if (d.is_dynamic() && !d.is_batch()) {
      bool given = false;
      for (NodeId in : inputs) given = given || index_of(g.node(in).type.dims, d) >= 0;
      if (!given) {
        return absl::InvalidArgumentError(
            absl::StrCat(name, ": the dynamic dim ", d.describe(),
                         " of its shape needs an input that has it (the input gives its sizes)"));
      }
    }
  }
  return TensorType{shape, DType::kFloat32, std::nullopt};
}

absl::Status check_distribution(NodeKind kind, const NodeSpec& spec) {
  const std::string& dist = spec.attrs.get<attr::Distribution>();
  if (dist != "uniform" && dist != "normal" && dist != "truncated_normal") {
    return absl::InvalidArgumentError(
        absl::StrCat(node_kind_name(kind), ": unknown distribution '", dist, "'"));
  }
  return absl::OkStatus();
}

// Seeded random numbers (initial values) over a static shape.
absl::StatusOr<TensorType> infer_random(const Graph& g, const std::vector<NodeId>& inputs,
                                        const NodeSpec& spec) {
  ASSIGN_OR_RETURN(TensorType t, filled_shape(g, NodeKind::kRandom, inputs, spec, true));
  if (!inputs.empty()) return absl::InvalidArgumentError("random expects 0 inputs");
  RETURN_IF_ERROR(check_distribution(NodeKind::kRandom, spec));
  return t;
}

absl::StatusOr<TensorType> infer_fresh_random(const Graph& g, const std::vector<NodeId>& inputs,
                                              const NodeSpec& spec) {
  ASSIGN_OR_RETURN(TensorType t, filled_shape(g, NodeKind::kFreshRandom, inputs, spec, false));
  RETURN_IF_ERROR(check_distribution(NodeKind::kFreshRandom, spec));
  return t;
}

absl::StatusOr<TensorType> infer_constant(const Graph& g, const std::vector<NodeId>& inputs,
                                          const NodeSpec& spec) {
  return filled_shape(g, NodeKind::kConstant, inputs, spec, false);
}

absl::StatusOr<TensorType> infer_weight_norm(const Graph& g, const std::vector<NodeId>& inputs,
                                             const NodeSpec& spec) {
  ASSIGN_OR_RETURN(auto t, require_float(g.node(inputs[0]).type, "a reparametrized weight"));
  const auto& axes = spec.attrs.get<attr::Axes>();
  if (axes.empty()) return absl::InvalidArgumentError("weight_norm needs at least one norm axis");
  for (const Dim& a : axes) {
    if (index_of(t.dims, a) < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("weight_norm: norm axis ", a.describe(), " is not in ", t.describe()));
    }
  }
  return t;
}

absl::StatusOr<TensorType> infer_weight_dropout(const Graph& g, const std::vector<NodeId>& inputs,
                                                const NodeSpec& spec) {
  ASSIGN_OR_RETURN(auto t, require_float(g.node(inputs[0]).type, "a reparametrized weight"));
  const double rate = spec.attrs.get<attr::Rate>();
  if (!(rate >= 0.0 && rate < 1.0))
    return kind_error(NodeKind::kWeightDropout, "rate ", rate, " must be in [0, 1)");
  return t;
}

absl::StatusOr<TensorType> infer_weight_noise(const Graph& g, const std::vector<NodeId>& inputs,
                                              const NodeSpec& spec) {
  ASSIGN_OR_RETURN(auto t, require_float(g.node(inputs[0]).type, "a reparametrized weight"));
  const double stddev = spec.attrs.get<attr::Stddev>();
  if (!(stddev >= 0.0))
    return kind_error(NodeKind::kWeightNoise, "stddev ", stddev, " must not be negative");
  return t;
}

// normalize, softmax: a float input that has the axes; its type.
absl::StatusOr<TensorType> infer_normalized(const Graph& g, NodeKind kind,
                                            const std::vector<NodeId>& inputs,
                                            const std::vector<Dim>& axes) {
  ASSIGN_OR_RETURN(
      auto t, require_float(g.node(inputs[0]).type, absl::StrCat(node_kind_name(kind), " input")));
  RETURN_IF_ERROR(without(t, axes, node_kind_name(kind)).status());
  return t;
}

// A non-batch axis of `t` (dynamic where `dynamic`).
absl::Status check_axis_of(NodeKind kind, const TensorType& t, const Dim& axis, bool dynamic) {
  if (index_of(t.dims, axis) < 0 || axis.is_batch() || (dynamic && !axis.is_dynamic())) {
    return kind_error(kind, "the axis ", axis.describe(), " must be a ", dynamic ? "dynamic " : "",
                      "axis of ", t.describe());
  }
  return absl::OkStatus();
}

// Shifting also takes sparse labels (padded with an index, e.g. BOS).
absl::StatusOr<TensorType> infer_shift_axis(const Graph& g, const std::vector<NodeId>& inputs,
                                            const NodeSpec& spec) {
  const TensorType& in = g.node(inputs[0]).type;
  if (in.sparse_dim) {
    const double p = spec.attrs.get<attr::PadValue>();
    if (p != static_cast<double>(static_cast<int64_t>(p)) || p < 0 ||
        p >= static_cast<double>(in.sparse_dim->size().value_or(0))) {
      return absl::InvalidArgumentError(absl::StrCat("shift_axis: the pad value ", p,
                                                     " of sparse labels must be an index of ",
                                                     in.sparse_dim->describe()));
    }
  }
  ASSIGN_OR_RETURN(auto t, in.sparse_dim ? absl::StatusOr<TensorType>(in)
                                         : require_float(in, "shift_axis input"));
  RETURN_IF_ERROR(check_axis_of(NodeKind::kShiftAxis, t, spec.attrs.get<attr::Axis>(), false));
  return t;
}

absl::StatusOr<TensorType> infer_seq_mask(const Graph& g, const std::vector<NodeId>& inputs,
                                          const NodeSpec& spec) {
  ASSIGN_OR_RETURN(auto t, require_float(g.node(inputs[0]).type, "seq_mask input"));
  RETURN_IF_ERROR(check_axis_of(NodeKind::kSeqMask, t, spec.attrs.get<attr::Axis>(), true));
  return t;
}

absl::StatusOr<TensorType> infer_pos_encoding(const Graph& g, const std::vector<NodeId>& inputs,
                                              const NodeSpec& spec) {
  ASSIGN_OR_RETURN(auto t, require_float(g.node(inputs[0]).type, "pos_encoding input"));
  int features = 0;
  for (const Dim& d : t.dims) features += d.is_feature_like();
  if (features != 1 || t.dims.back().size().value_or(1) % 2 != 0) {
    return absl::InvalidArgumentError(absl::StrCat("pos_encoding: the input ", t.describe(),
                                                   " needs one feature dim, of even size"));
  }
  const Dim& axis = spec.attrs.get<attr::Axis>();
  // In a loop over `axis` (attr loop), the encoding of the current frame.
  if (spec.attrs.has<attr::Loop>()) {
    if (index_of(t.dims, axis) >= 0 || axis.is_batch()) {
      return absl::InvalidArgumentError(absl::StrCat("pos_encoding: a frame ", t.describe(),
                                                     " of the loop over ", axis.describe(),
                                                     " must lack that axis"));
    }
    return t;
  }
  RETURN_IF_ERROR(check_axis_of(NodeKind::kPosEncoding, t, axis, false));
  return t;
}

}  // namespace

const std::vector<absl::string_view>& activation_funcs() {
  static const std::vector<absl::string_view> kFuncs = {
      "relu", "tanh",  "sigmoid", "gelu",     "elu",      "swish", "exp", "log", "abs",
      "sqrt", "rsqrt", "square",  "negative", "softplus", "silu",  "sin", "cos"};
  return kFuncs;
}

absl::StatusOr<TensorType> infer_type(const Graph& g, NodeKind kind,
                                      const std::vector<NodeId>& inputs, const NodeSpec& spec) {
  for (NodeId id : inputs) {
    if (!id.valid() || static_cast<size_t>(id.index) >= g.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat(node_kind_name(kind), ": input %", id.index, " does not exist"));
    }
  }
  if (int n = kind_facts(kind).arity; n != KindFacts::kVariadic)
    RETURN_IF_ERROR(arity(kind, inputs, n));
  // Every attribute the kind needs is there, with its declared type: the
  // rules below read them with get<>().
  RETURN_IF_ERROR(check_attrs(kind, spec.attrs));
  switch (kind) {
    case NodeKind::kData: {
      if (!spec.type) return absl::InvalidArgumentError("data needs an explicit type");
      return *spec.type;
    }
    case NodeKind::kParam: {
      if (!spec.param.valid() || static_cast<size_t>(spec.param.index) >= g.params().size()) {
        return absl::InvalidArgumentError("param node refers to no param");
      }
      const Param& p = g.param(spec.param);
      return TensorType{p.dims, p.dtype, std::nullopt};
    }
#define RETC_X(E, S, F) case NodeKind::k##E:
      RETC_FOR_EACH_BINARY_KIND(RETC_X)
#undef RETC_X
      return infer_elementwise(g, kind, inputs);
    case NodeKind::kNorm: {
      const auto& axes = spec.attrs.get<attr::Axes>();
      ASSIGN_OR_RETURN(auto t, require_float(g.node(inputs[0]).type, "norm input"));
      for (const Dim& a : axes) {
        int i = index_of(t.dims, a);
        if (i < 0) {
          return absl::InvalidArgumentError(
              absl::StrCat("norm: axis ", a.describe(), " is not in ", t.describe()));
        }
        t.dims.erase(t.dims.begin() + i);
      }
      return t;
    }
    case NodeKind::kRandom:
      return infer_random(g, inputs, spec);
    case NodeKind::kFreshRandom:
      return infer_fresh_random(g, inputs, spec);
    case NodeKind::kConstant:
      return infer_constant(g, inputs, spec);
    case NodeKind::kWeightNorm:
      return infer_weight_norm(g, inputs, spec);
    case NodeKind::kWeightDropout:
      return infer_weight_dropout(g, inputs, spec);
    case NodeKind::kWeightNoise:
      return infer_weight_noise(g, inputs, spec);
    case NodeKind::kDot:
      return infer_dot(g, inputs, spec);
    case NodeKind::kActivation: {
      const auto& func = spec.attrs.get<attr::Func>();
      const auto& funcs = activation_funcs();
      if (std::find(funcs.begin(), funcs.end(), func) == funcs.end()) {
        return absl::InvalidArgumentError(absl::StrCat("unknown activation '", func, "'"));
      }
      return require_float(g.node(inputs[0]).type, "activation input");
    }
    case NodeKind::kDropout: {
      const auto& rate = spec.attrs.get<attr::Rate>();
      if (!(rate >= 0.0 && rate < 1.0)) {
        return absl::InvalidArgumentError(
            absl::StrCat("dropout rate must be in [0, 1), got ", rate));
      }
      const auto& axes = spec.attrs.get<attr::Axes>();
      const TensorType& t = g.node(inputs[0]).type;
      if (axes.empty())
        return absl::InvalidArgumentError("dropout: axes (where the mask varies) is empty");
      for (const Dim& a : axes) {
        if (index_of(t.dims, a) < 0) {
          return absl::InvalidArgumentError(
              absl::StrCat("dropout: mask axis ", a.describe(), " is not in ", t.describe()));
        }
      }
      return require_float(t, "dropout input");
    }
    case NodeKind::kReduce: {
      const auto& mode = spec.attrs.get<attr::Mode>();
      const bool arg = mode == "argmax" || mode == "argmin";
      if (mode != "sum" && mode != "mean" && mode != "max" && mode != "min" &&
          mode != "logsumexp" && !arg) {
        return absl::InvalidArgumentError(absl::StrCat("reduce: unknown mode '", mode, "'"));
      }
      const auto& axes = spec.attrs.get<attr::Axes>();
      if (axes.empty()) return absl::InvalidArgumentError("reduce needs at least one axis");
      ASSIGN_OR_RETURN(auto t, require_float(g.node(inputs[0]).type, "reduce input"));
      ASSIGN_OR_RETURN(auto dims, without(t, axes, "reduce"));
      // argmax / argmin: int32 indices, sparse over the one (static) axis.
      if (arg) {
        if (axes.size() != 1 || !axes[0].size()) {
          return absl::InvalidArgumentError(absl::StrCat(
              "reduce: ", mode, " needs exactly one static axis, got ", describe(axes)));
        }
        return TensorType{std::move(dims), DType::kInt32, axes[0]};
      }
      return TensorType{std::move(dims), t.dtype, std::nullopt};
    }
    case NodeKind::kNormalize:
      return infer_normalized(g, kind, inputs, spec.attrs.get<attr::Axes>());
    case NodeKind::kSoftmax:
      return infer_normalized(g, kind, inputs, {spec.attrs.get<attr::Axis>()});
    case NodeKind::kGather:
      return infer_gather(g, inputs, spec);
    case NodeKind::kSelfAttention:
      return infer_self_attention(g, inputs, spec);
    case NodeKind::kConv:
      return infer_conv(g, inputs, spec);
    case NodeKind::kTransposedConv:
      return infer_transposed_conv(g, inputs, spec);
    case NodeKind::kReplaceDim:
      return infer_replace_dim(g, inputs, spec);
    case NodeKind::kStack:
      return infer_stack(g, inputs, spec);
    case NodeKind::kRawLayer:
      return infer_raw_layer(inputs, spec);
    case NodeKind::kWindow:
      return infer_window(g, inputs, spec);
    case NodeKind::kLogicalNot:
      return infer_logical_not(g, inputs);
    case NodeKind::kCumsum:
      return infer_cumsum(g, inputs, spec);
    case NodeKind::kLogCumsumExp:
      return infer_log_cumsum_exp(g, inputs, spec);
    case NodeKind::kParamAssign:
      return infer_param_assign(g, inputs, spec);
    case NodeKind::kEditDistance:
      return infer_edit_distance(g, inputs, spec);
    case NodeKind::kTopK:
      return infer_top_k(g, inputs, spec);
    case NodeKind::kPad:
      return infer_pad(g, inputs, spec);
    case NodeKind::kPool:
      return infer_pool(g, inputs, spec);
    case NodeKind::kSlice:
      return infer_slice(g, inputs, spec);
    case NodeKind::kRangeOfLengths:
      return infer_range_of_lengths(g, inputs, spec);
    case NodeKind::kScatter:
      return infer_scatter(g, inputs, spec);
    case NodeKind::kMaskedSelect:
      return infer_masked_select(g, inputs, spec);
    case NodeKind::kRepeat:
      return infer_repeat(g, inputs, spec);
    case NodeKind::kLength:
      return infer_length(g, inputs, spec);
    case NodeKind::kLoopEnd:
      return infer_loop_end(g, inputs, spec);
    case NodeKind::kChoice:
      return infer_choice(g, inputs, spec);
    case NodeKind::kCumConcat:
      return infer_cum_concat(g, inputs, spec);
    case NodeKind::kSplitDims:
      return infer_split_dims(g, inputs, spec);
    case NodeKind::kMergeDims:
      return infer_merge_dims(g, inputs, spec);
    case NodeKind::kBatchNorm:
      return infer_batch_norm(g, inputs, spec);
    case NodeKind::kCtcLoss:
      return infer_ctc_loss(g, inputs, spec);
    case NodeKind::kLoopUnstack:
      return infer_loop_unstack(g, inputs, spec);
    case NodeKind::kLoopState:
      return infer_loop_state(g, inputs, spec);
    case NodeKind::kLoopNext:
      return infer_loop_next(g, inputs, spec);
    case NodeKind::kLoopStack:
      return infer_loop_stack(g, inputs, spec);
    case NodeKind::kRange:
      return infer_range(g, inputs, spec);
    case NodeKind::kCompare:
      return infer_compare(g, inputs, spec);
    case NodeKind::kCast:
      return infer_cast(g, inputs, spec);
    case NodeKind::kWhere:
      return infer_where(g, inputs);
    case NodeKind::kTrainFlag:
      return TensorType{{}, DType::kBool, std::nullopt};
    case NodeKind::kTrainStep:
      return TensorType{{}, DType::kInt64, std::nullopt};
    case NodeKind::kCustomLoss: {
      RETURN_IF_ERROR(check_loss_options(spec));
      return require_float(g.node(inputs[0]).type, "custom_loss value");
    }
    case NodeKind::kShiftAxis:
      return infer_shift_axis(g, inputs, spec);
    case NodeKind::kSeqMask:
      return infer_seq_mask(g, inputs, spec);
    case NodeKind::kPosEncoding:
      return infer_pos_encoding(g, inputs, spec);
    case NodeKind::kConcat:
      return infer_concat(g, inputs, spec);
    case NodeKind::kScaleGrad: {
      return require_float(g.node(inputs[0]).type, "scale_grad input");
    }
    case NodeKind::kLstm:
      return infer_lstm(g, inputs, spec);
    case NodeKind::kLstmFinal:
      return infer_lstm_final(g, inputs, spec);
    case NodeKind::kCond: {
      const TensorType& pred = g.node(inputs[0]).type;
      const TensorType& a = g.node(inputs[1]).type;
      const TensorType& c = g.node(inputs[2]).type;
      if (pred.dtype != DType::kBool || !pred.dims.empty() || pred.sparse_dim)
        return absl::InvalidArgumentError(
            absl::StrCat("cond: the condition ", pred.describe(), " must be a scalar bool"));
      bool same =
          a.dims.size() == c.dims.size() && a.dtype == c.dtype && a.sparse_dim == c.sparse_dim;
      for (const Dim& d : a.dims) same = same && index_of(c.dims, d) >= 0;
      if (!same) {
        return absl::InvalidArgumentError(absl::StrCat("cond: the branches' values ", a.describe(),
                                                       " and ", c.describe(), " differ in type"));
      }
      return a;
    }
    case NodeKind::kCrossEntropy:
      return infer_cross_entropy(g, inputs, spec);
    case NodeKind::kRegressionLoss:
      return infer_regression_loss(g, inputs, spec);
  }
  return absl::InternalError(
      absl::StrCat("infer_type: unhandled node kind ", static_cast<int>(kind)));
}

}  // namespace retc::ir
