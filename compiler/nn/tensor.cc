#include "compiler/nn/tensor.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "compiler/nn/builder.h"
#include "compiler/nn/error.h"

namespace retc::nn {
namespace {

ir::SourceLoc L(std::source_location loc) { return ir::SourceLoc::from(loc); }

Builder& builder_of(const Tensor& t, absl::string_view op, const ir::SourceLoc& loc) {
  if (!t.defined()) fail(loc, absl::StrCat(op, ": input tensor is undefined"));
  return t.builder();
}

Tensor binary(ir::NodeKind kind, const Tensor& a, const Tensor& b, const ir::SourceLoc* loc) {
  Builder& bld = builder_of(a, ir::node_kind_name(kind), loc ? *loc : ir::SourceLoc{});
  if (!ir::binary_op(kind)) {
    fail(loc ? *loc : ir::SourceLoc{},
         absl::StrCat("elementwise: ", ir::node_kind_name(kind), " is not a binary op"));
  }
  if (loc) return bld.add(kind, {a, b}, {}, *loc);
  return bld.add_operator(kind, a, b);
}

}  // namespace

const ir::TensorType& Tensor::type() const { return builder_->graph().node(id_).type; }

const Tensor& Tensor::mark_as_output(std::string name, std::source_location loc) const {
  builder_of(*this, "mark_as_output", L(loc))
      .mark(*this, ir::Mark::Kind::kOutput, std::move(name), L(loc));
  return *this;
}

const Tensor& Tensor::mark_as_search_output(std::string name, std::source_location loc) const {
  builder_of(*this, "mark_as_search_output", L(loc))
      .mark(*this, ir::Mark::Kind::kSearch, std::move(name), L(loc));
  return *this;
}

const Tensor& Tensor::mark_as_loss(std::string name, std::source_location loc) const {
  builder_of(*this, "mark_as_loss", L(loc))
      .mark(*this, ir::Mark::Kind::kLoss, std::move(name), L(loc));
  return *this;
}

Tensor elementwise(ir::NodeKind kind, const Tensor& a, const Tensor& b, std::source_location loc) {
  ir::SourceLoc l = L(loc);
  return binary(kind, a, b, &l);
}
Tensor operator+(const Tensor& a, const Tensor& b) {
  return binary(ir::NodeKind::kAdd, a, b, nullptr);
}
Tensor operator-(const Tensor& a, const Tensor& b) {
  return binary(ir::NodeKind::kSub, a, b, nullptr);
}
Tensor operator*(const Tensor& a, const Tensor& b) {
  return binary(ir::NodeKind::kMul, a, b, nullptr);
}
Tensor operator/(const Tensor& a, const Tensor& b) {
  return binary(ir::NodeKind::kDiv, a, b, nullptr);
}

Tensor dot(const Tensor& a, const Tensor& b, std::vector<ir::Dim> reduce,
           std::source_location loc) {
  return builder_of(a, "dot", L(loc))
      .add(ir::NodeKind::kDot, {a, b}, {ir::attr::Reduce{std::move(reduce)}}, L(loc));
}

Tensor activation(const Tensor& x, std::string func, std::source_location loc) {
  return builder_of(x, "activation", L(loc))
      .add(ir::NodeKind::kActivation, {x}, {ir::attr::Func{std::move(func)}}, L(loc));
}

Tensor named_activation(const Tensor& x, const std::string& name, std::source_location loc) {
  if (name != "relu_square") return activation(x, name, loc);
  Tensor h = activation(x, "relu", loc);
  return mul(h, h, loc);
}

bool is_named_activation(const std::string& name) {
  const auto& funcs = ir::activation_funcs();
  return name == "relu_square" || std::find(funcs.begin(), funcs.end(), name) != funcs.end();
}

Tensor relu(const Tensor& x, std::source_location loc) { return activation(x, "relu", loc); }
Tensor tanh(const Tensor& x, std::source_location loc) { return activation(x, "tanh", loc); }
Tensor sigmoid(const Tensor& x, std::source_location loc) { return activation(x, "sigmoid", loc); }
Tensor swish(const Tensor& x, std::source_location loc) { return activation(x, "swish", loc); }

Tensor dropout(const Tensor& x, double rate, std::vector<ir::Dim> axes, std::source_location loc) {
  Builder& b = builder_of(x, "dropout", L(loc));
  if (axes.empty()) axes = x.dims();
  return b.add(ir::NodeKind::kDropout, {x}, {ir::attr::Rate{rate}, ir::attr::Axes{std::move(axes)}},
               L(loc));
}

Tensor stochastic_depth(const Tensor& x, const Tensor& branch, double p, std::source_location loc) {
  builder_of(branch, "stochastic_depth", L(loc));
  if (ir::index_of(branch.dims(), ir::Dim::batch()) < 0) {
    fail(L(loc), absl::StrCat("stochastic_depth: the branch ", ir::describe(branch.dims()),
                              " has no batch dim to drop per sequence"));
  }
  Tensor dropped = dropout(branch, p, {ir::Dim::batch()}, loc);
  return x.builder().add(ir::NodeKind::kAdd, {x, dropped}, {}, L(loc));
}

Tensor scale_gradient(const Tensor& x, double scale, std::source_location loc) {
  return builder_of(x, "scale_gradient", L(loc))
      .add(ir::NodeKind::kScaleGrad, {x}, {ir::attr::Scale{scale}}, L(loc));
}

Tensor stop_gradient(const Tensor& x, std::source_location loc) {
  return scale_gradient(x, 0.0, loc);
}

Tensor constant(Builder& b, double value, std::vector<ir::Dim> shape, std::source_location loc) {
  return b.add(ir::NodeKind::kConstant, {},
               {ir::attr::Value{value}, ir::attr::Shape{std::move(shape)}}, L(loc));
}

Tensor constant(Builder& b, double value, std::vector<ir::Dim> shape,
                const std::vector<Tensor>& sizes_from, std::source_location loc) {
  return b.add(ir::NodeKind::kConstant, sizes_from,
               {ir::attr::Value{value}, ir::attr::Shape{std::move(shape)}}, L(loc));
}

Tensor constant(Builder& b, const std::vector<double>& values, const ir::Dim& dim,
                std::source_location loc) {
  if (!dim.size() || dim.is_dynamic() || *dim.size() != static_cast<int64_t>(values.size())) {
    fail(L(loc), absl::StrCat("constant: ", values.size(), " values do not fit the dim ",
                              dim.describe(), ", which needs a static size of as many"));
  }
  std::vector<Tensor> entries;
  for (double v : values) entries.push_back(constant(b, v, {}, loc));
  return stack(entries, dim, loc);
}

namespace {

ir::Attrs random_attrs(std::vector<ir::Dim> shape, const std::string& distribution, double a,
                       double b) {
  ir::Attrs attrs{ir::attr::Shape{std::move(shape)}, ir::attr::Distribution{distribution}};
  if (distribution == "uniform") {
    attrs.set<ir::attr::Minval>(a).set<ir::attr::Maxval>(b);
  } else {
    attrs.set<ir::attr::Mean>(a).set<ir::attr::Stddev>(b);
  }
  return attrs;
}

void check_random(const std::string& distribution, double a, double b, const char* fn,
                  std::source_location loc) {
  if (distribution == "normal" && !(b >= 0))
    fail(L(loc), absl::StrCat(fn, ": stddev must not be negative, got ", b));
  if (distribution == "uniform" && !(a <= b))
    fail(L(loc), absl::StrCat(fn, ": minval ", a, " exceeds maxval ", b));
}

Tensor seeded_random(Builder& b, std::vector<ir::Dim> shape, const std::string& distribution,
                     double p0, double p1, int64_t seed, const char* fn, std::source_location loc) {
  check_random(distribution, p0, p1, fn, loc);
  ir::Attrs attrs = random_attrs(std::move(shape), distribution, p0, p1);
  attrs.set<ir::attr::Seed>(seed);
  return b.add(ir::NodeKind::kRandom, {}, std::move(attrs), L(loc));
}

Tensor fresh_random(Builder& b, std::vector<ir::Dim> shape, const std::string& distribution,
                    double p0, double p1, const std::vector<Tensor>& sizes_from, const char* fn,
                    std::source_location loc) {
  check_random(distribution, p0, p1, fn, loc);
  return b.add(ir::NodeKind::kFreshRandom, sizes_from,
               random_attrs(std::move(shape), distribution, p0, p1), L(loc));
}

}  // namespace

Tensor seeded_random_normal(Builder& b, std::vector<ir::Dim> shape, double mean, double stddev,
                            int64_t seed, std::source_location loc) {
  return seeded_random(b, std::move(shape), "normal", mean, stddev, seed, "seeded_random_normal",
                       loc);
}

Tensor seeded_random_uniform(Builder& b, std::vector<ir::Dim> shape, double minval, double maxval,
                             int64_t seed, std::source_location loc) {
  return seeded_random(b, std::move(shape), "uniform", minval, maxval, seed,
                       "seeded_random_uniform", loc);
}

Tensor random_uniform(Builder& b, std::vector<ir::Dim> shape, double minval, double maxval,
                      const std::vector<Tensor>& sizes_from, std::source_location loc) {
  return fresh_random(b, std::move(shape), "uniform", minval, maxval, sizes_from, "random_uniform",
                      loc);
}

Tensor random_normal(Builder& b, std::vector<ir::Dim> shape, double mean, double stddev,
                     const std::vector<Tensor>& sizes_from, std::source_location loc) {
  return fresh_random(b, std::move(shape), "normal", mean, stddev, sizes_from, "random_normal",
                      loc);
}

Tensor argmax(const Tensor& x, const ir::Dim& axis, std::source_location loc) {
  return reduce(x, "argmax", {axis}, loc);
}

Tensor argmin(const Tensor& x, const ir::Dim& axis, std::source_location loc) {
  return reduce(x, "argmin", {axis}, loc);
}

Tensor reduce(const Tensor& x, std::string mode, std::vector<ir::Dim> axes,
              std::source_location loc) {
  return builder_of(x, "reduce", L(loc))
      .add(ir::NodeKind::kReduce, {x},
           {ir::attr::Mode{std::move(mode)}, ir::attr::Axes{std::move(axes)}}, L(loc));
}

Tensor normalize(const Tensor& x, std::vector<ir::Dim> axes, double epsilon,
                 std::source_location loc) {
  return builder_of(x, "normalize", L(loc))
      .add(ir::NodeKind::kNormalize, {x},
           {ir::attr::Axes{std::move(axes)}, ir::attr::Epsilon{epsilon}}, L(loc));
}

Tensor softmax(const Tensor& x, const ir::Dim& axis, std::source_location loc) {
  return builder_of(x, "softmax", L(loc))
      .add(ir::NodeKind::kSoftmax, {x}, {ir::attr::Axis{axis}, ir::attr::Log{false}}, L(loc));
}

Tensor log_softmax(const Tensor& x, const ir::Dim& axis, std::source_location loc) {
  return builder_of(x, "log_softmax", L(loc))
      .add(ir::NodeKind::kSoftmax, {x}, {ir::attr::Axis{axis}, ir::attr::Log{true}}, L(loc));
}

Tensor gather(const Tensor& x, const Tensor& indices, const ir::Dim& axis,
              std::source_location loc) {
  return builder_of(x, "gather", L(loc))
      .add(ir::NodeKind::kGather, {x, indices}, {ir::attr::Axis{axis}}, L(loc));
}

Tensor concat(const Tensor& a, const ir::Dim& axis_a, const Tensor& b, const ir::Dim& axis_b,
              std::source_location loc) {
  return builder_of(a, "concat", L(loc))
      .add(ir::NodeKind::kConcat, {a, b},
           {ir::attr::AxisA{axis_a}, ir::attr::AxisB{axis_b}, ir::attr::OutDim{axis_a + axis_b}},
           L(loc));
}

Tensor slice(const Tensor& x, const ir::Dim& axis, int64_t start, const ir::Dim& out_dim,
             std::source_location loc) {
  return builder_of(x, "slice", L(loc))
      .add(ir::NodeKind::kSlice, {x},
           {ir::attr::Axis{axis}, ir::attr::Start{start}, ir::attr::OutDim{out_dim}}, L(loc));
}

// Composites: slice from a start per sequence, reverse and inverse_window
// are gathers at positions computed with the IR's int arithmetic (as
// rf.reverse_sequence is on both of RETURNN's backends), so that neither
// target lowers them again.
namespace {

Tensor int32_scalar(Builder& b, int64_t v, std::source_location loc) {
  return cast(constant(b, static_cast<double>(v), {}, loc), ir::DType::kInt32, loc);
}

// The dense int32 positions 0, 1, ... along `axis` (of x where it is dynamic).
Tensor positions(const Tensor& x, const ir::Dim& axis, std::source_location loc) {
  if (axis.is_dynamic()) return range_in_axis(x, axis, loc);
  return cast(range(x.builder(), axis, loc), ir::DType::kInt32, loc);
}

// The scalar v of x's type (a sparse x: index v).
Tensor scalar_like(const Tensor& x, double v, std::source_location loc) {
  const Tensor c = constant(x.builder(), v, {}, loc);
  if (x.type().sparse_dim)
    return as_indices(cast(c, ir::DType::kInt32, loc), *x.type().sparse_dim, loc);
  return x.type().dtype == ir::DType::kFloat32 ? c : cast(c, x.type().dtype, loc);
}

// Whether each frame of x along the dynamic `axis` lies within its sequence's length.
Tensor within_lengths(const Tensor& x, const ir::Dim& axis, std::source_location loc) {
  return compare(range_in_axis(x, axis, loc), length(x, axis, loc), "less", loc);
}

}  // namespace

Tensor scatter(const Tensor& x, const Tensor& indices, const ir::Dim& axis, const std::string& mode,
               double fill, std::source_location loc) {
  Builder& b = builder_of(x, "scatter", L(loc));
  builder_of(indices, "scatter", L(loc));
  auto scatter_of = [&](const Tensor& v, const std::string& m, double f) {
    return b.add(ir::NodeKind::kScatter, {v, indices},
                 {ir::attr::Axis{axis}, ir::attr::Mode{m}, ir::attr::Value{f}}, L(loc));
  };
  static const std::vector<std::string> kModes = {"sum",  "max",       "min",
                                                  "mean", "logsumexp", "argmax"};
  if (std::find(kModes.begin(), kModes.end(), mode) == kModes.end()) {
    fail(L(loc),
         absl::StrCat("scatter: mode must be sum, max, min, mean, logsumexp or argmax, got '", mode,
                      "'"));
  }
  // The primitive modes, and dense indices (the primitive names the mistake).
  if ((mode != "mean" && mode != "logsumexp" && mode != "argmax") || !indices.type().sparse_dim)
    return scatter_of(x, mode, fill);
  const ir::Dim out_dim = *indices.type().sparse_dim;  // a copy: adding nodes moves types
  // An entry's value at each frame that writes it; padding frames read entry 0
  // (their indices may lie anywhere; they write nothing).
  auto at_frames = [&](const Tensor& entries) {
    const Tensor in_frames = axis.is_dynamic()
                                 ? where(within_lengths(indices, axis, loc), indices,
                                         sparse_constant(b, 0, out_dim, {}, {}, loc), loc)
                                 : indices;
    return gather(entries, in_frames, out_dim, loc);
  };
  if (mode == "argmax") {
    // The first of the frames that hold each entry's max: their positions' min.
    const Tensor is_max = compare(x, at_frames(scatter_of(x, "max", 0.0)), "equal", loc);
    return scatter_of(
        where(is_max, range_in_axis(x, axis, loc), int32_scalar(b, 1 << 30, loc), loc), "min",
        fill);
  }
  // How many frames each entry combines: the ones of the indices' dims, added.
  const Tensor ones = cast(compare(indices, indices, "equal", loc), x.type().dtype, loc);
  const Tensor count = scatter_of(ones, "sum", 0.0);
  const Tensor written = compare(count, constant(b, 0.0, {}, loc), "greater", loc);
  const Tensor fills = constant(b, fill, {}, loc);
  if (mode == "mean") {
    const Tensor sum = scatter_of(x, "sum", 0.0);
    return where(written, div(sum, maximum(count, constant(b, 1.0, {}, loc), loc), loc), fills,
                 loc);
  }
  // logsumexp: m + log(sum(exp(x - m))) with each entry's max m (no gradient
  // through m: the gradient is the softmax either way).
  const Tensor m = stop_gradient(scatter_of(x, "max", 0.0), loc);
  const Tensor sum = scatter_of(activation(sub(x, at_frames(m), loc), "exp", loc), "sum", 0.0);
  const Tensor lse =
      add(m, activation(where(written, sum, constant(b, 1.0, {}, loc), loc), "log", loc), loc);
  return where(written, lse, fills, loc);
}

Tensor sparse_constant(Builder& b, int64_t label, const ir::Dim& vocab, std::vector<ir::Dim> shape,
                       const std::vector<Tensor>& sizes_from, std::source_location loc) {
  if (!vocab.size() || vocab.is_dynamic() || label < 0 || label >= *vocab.size())
    fail(L(loc), absl::StrCat("sparse_constant: the label ", label, " must be in [0, ",
                              vocab.size() ? absl::StrCat(*vocab.size()) : "?", ") of the vocab ",
                              vocab.describe()));
  return as_indices(constant(b, static_cast<double>(label), std::move(shape), sizes_from, loc),
                    vocab, loc);
}

Tensor as_indices(const Tensor& x, const ir::Dim& dim, std::source_location loc) {
  Builder& b = builder_of(x, "as_indices", L(loc));
  if (x.type().dtype == ir::DType::kBool)
    fail(L(loc), absl::StrCat("as_indices: needs ints or floats, got ", x.type().describe()));
  return b.add(
      ir::NodeKind::kCast, {x},
      {ir::attr::DType{std::string(ir::dtype_name(ir::DType::kInt32))}, ir::attr::SparseDim{dim}},
      L(loc));
}

Tensor slice(const Tensor& x, const ir::Dim& axis, const Tensor& start, const ir::Dim& out_dim,
             std::source_location loc) {
  Builder& b = builder_of(x, "slice", L(loc));
  builder_of(start, "slice", L(loc));
  if (ir::index_of(x.dims(), axis) < 0 || !axis.is_dynamic() || axis.is_batch() ||
      !out_dim.size() || out_dim.is_dynamic() || ir::index_of(x.dims(), out_dim) >= 0)
    fail(L(loc), absl::StrCat("slice: the axis ", axis.describe(), " must be a dynamic axis of ",
                              x.type().describe(), " and the out dim ", out_dim.describe(),
                              " a new static dim"));
  const ir::TensorType& st = start.type();
  if (st.dtype != ir::DType::kInt32 || st.sparse_dim || st.dims.size() != 1 ||
      !st.dims[0].is_batch() || ir::index_of(x.dims(), st.dims[0]) < 0)
    fail(L(loc), absl::StrCat("slice: the start ", st.describe(),
                              " must be int32 over the batch of ", x.type().describe()));
  // Entry i of a sequence is its frame start + i, 0 outside its frames.
  const Tensor at = add(start, positions(x, out_dim, loc), loc);
  const Tensor zero = int32_scalar(b, 0, loc);
  const Tensor valid = logical_and(compare(at, zero, "greater_equal", loc),
                                   compare(at, length(x, axis, loc), "less", loc), loc);
  const Tensor y = gather(x, as_indices(where(valid, at, zero, loc), axis, loc), axis, loc);
  return where(valid, y, scalar_like(x, 0.0, loc), loc);
}

Tensor reverse(const Tensor& x, const ir::Dim& axis, std::source_location loc) {
  Builder& b = builder_of(x, "reverse", L(loc));
  if (ir::index_of(x.dims(), axis) < 0 || axis.is_batch())
    fail(L(loc), absl::StrCat("reverse: the axis ", axis.describe(), " is not a non-batch axis of ",
                              x.type().describe()));
  // Frame t of a sequence of n takes frame n - 1 - t; the frames past its
  // end keep their place.
  const Tensor t = positions(x, axis, loc);
  const Tensor last = axis.is_dynamic() ? sub(length(x, axis, loc), int32_scalar(b, 1, loc), loc)
                                        : int32_scalar(b, *axis.size() - 1, loc);
  Tensor from = sub(last, t, loc);
  if (axis.is_dynamic())
    from = where(compare(from, int32_scalar(b, 0, loc), "greater_equal", loc), from, t, loc);
  return gather(x, as_indices(from, axis, loc), axis, loc);
}

std::vector<Tensor> split(const Tensor& x, const ir::Dim& axis, const std::vector<ir::Dim>& parts,
                          std::source_location loc) {
  int64_t total = 0;
  for (const ir::Dim& d : parts) total += d.size().value_or(0);
  if (!axis.size() || total != *axis.size()) {
    fail(L(loc), absl::StrCat("split: the parts ", ir::describe(parts), " do not add up to ",
                              axis.describe()));
  }
  std::vector<Tensor> out;
  int64_t start = 0;
  for (const ir::Dim& d : parts) {
    out.push_back(slice(x, axis, start, d, loc));
    start += *d.size();
  }
  return out;
}

Tensor split_dims(const Tensor& x, const ir::Dim& axis, std::vector<ir::Dim> dims,
                  std::source_location loc) {
  return builder_of(x, "split_dims", L(loc))
      .add(ir::NodeKind::kSplitDims, {x},
           {ir::attr::Axis{axis}, ir::attr::DimsAttr{std::move(dims)}}, L(loc));
}

Tensor merge_dims(const Tensor& x, std::vector<ir::Dim> axes, const ir::Dim& out_dim,
                  std::source_location loc) {
  return builder_of(x, "merge_dims", L(loc))
      .add(ir::NodeKind::kMergeDims, {x},
           {ir::attr::Axes{std::move(axes)}, ir::attr::OutDim{out_dim}}, L(loc));
}

ir::Dim windowed_dim(const ir::Dim& axis, int64_t window, int64_t stride, int64_t dilation,
                     const std::string& padding) {
  if (stride == 1 && (padding == "same" || window == 1)) return axis;
  std::string name = absl::StrCat(axis.name(), "_", padding == "same" ? "s" : "v", stride);
  if (!axis.size()) return ir::Dim::spatial(name);
  int64_t span = (window - 1) * dilation + 1;
  int64_t len = padding == "same" ? *axis.size() : *axis.size() - span + 1;
  int64_t n = len <= 0 ? 0 : (len + stride - 1) / stride;
  return axis.is_feature_like() ? ir::Dim::feature(name, n) : ir::Dim::spatial(name, n);
}

Tensor pool(const Tensor& x, std::string mode, std::vector<ir::Dim> axes, std::vector<int64_t> size,
            std::vector<int64_t> strides, std::string padding, std::vector<ir::Dim> out_axes,
            std::source_location loc) {
  Builder& b = builder_of(x, "pool", L(loc));
  if (strides.empty()) strides = size;

  if (out_axes.empty() && size.size() == axes.size() && strides.size() == axes.size()) {
    for (size_t i = 0; i < axes.size(); ++i)
      out_axes.push_back(windowed_dim(axes[i], size[i], strides[i], 1, padding));
  }
  return b.add(ir::NodeKind::kPool, {x},
               {ir::attr::Mode{std::move(mode)}, ir::attr::Axes{std::move(axes)},
                ir::attr::OutAxes{std::move(out_axes)}, ir::attr::Size{std::move(size)},
                ir::attr::Strides{std::move(strides)}, ir::attr::Padding{std::move(padding)}},
               L(loc));
}

Tensor shift_right(const Tensor& x, const ir::Dim& axis, int64_t amount, double pad_value,
                   std::source_location loc) {
  ir::Attrs attrs{ir::attr::Axis{axis}, ir::attr::Amount{amount}};
  if (pad_value != 0.0) attrs.set<ir::attr::PadValue>(pad_value);
  return builder_of(x, "shift_right", L(loc)).add(ir::NodeKind::kShiftAxis, {x}, attrs, L(loc));
}

Tensor add_positional_encoding(const Tensor& x, const ir::Dim& axis, std::source_location loc) {
  return builder_of(x, "add_positional_encoding", L(loc))
      .add(ir::NodeKind::kPosEncoding, {x}, {ir::attr::Axis{axis}}, L(loc));
}

Tensor mask_padding(const Tensor& x, const ir::Dim& axis, double value, std::source_location loc) {
  return builder_of(x, "mask_padding", L(loc))
      .add(ir::NodeKind::kSeqMask, {x}, {ir::attr::Axis{axis}, ir::attr::Value{value}}, L(loc));
}

Tensor train_flag(Builder& b, std::source_location loc) {
  return b.add(ir::NodeKind::kTrainFlag, {}, {}, L(loc));
}

Tensor global_train_step(Builder& b, std::source_location loc) {
  return b.add(ir::NodeKind::kTrainStep, {}, {}, L(loc));
}

Tensor range(Builder& b, const ir::Dim& dim, std::source_location loc) {
  return b.add(ir::NodeKind::kRange, {}, {ir::attr::DimAttr{dim}}, L(loc));
}

Tensor range_in_axis(const Tensor& x, const ir::Dim& axis, std::source_location loc) {
  Builder& b = builder_of(x, "range_in_axis", L(loc));
  if (axis.is_dynamic() || ir::index_of(x.dims(), axis) < 0)
    return b.add(ir::NodeKind::kRange, {x}, {ir::attr::DimAttr{axis}}, L(loc));
  return range(b, axis, loc);  // a static axis: its positions need no lengths
}

Tensor compare(const Tensor& a, const Tensor& b, std::string op, std::source_location loc) {
  return builder_of(a, "compare", L(loc))
      .add(ir::NodeKind::kCompare, {a, b}, {ir::attr::Op{std::move(op)}}, L(loc));
}

Tensor cast(const Tensor& x, ir::DType dtype, std::source_location loc) {
  return builder_of(x, "cast", L(loc))
      .add(ir::NodeKind::kCast, {x}, {ir::attr::DType{std::string(ir::dtype_name(dtype))}}, L(loc));
}

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b, std::source_location loc) {
  return builder_of(cond, "where", L(loc)).add(ir::NodeKind::kWhere, {cond, a, b}, {}, L(loc));
}

Tensor length(const Tensor& x, const ir::Dim& axis, std::source_location loc) {
  return builder_of(x, "length", L(loc))
      .add(ir::NodeKind::kLength, {x}, {ir::attr::Axis{axis}}, L(loc));
}

Tensor masked_select(const Tensor& x, const Tensor& mask, const ir::Dim& axis,
                     const ir::Dim& out_axis, std::source_location loc) {
  return builder_of(x, "masked_select", L(loc))
      .add(ir::NodeKind::kMaskedSelect, {x, mask},
           {ir::attr::Axis{axis}, ir::attr::OutDim{out_axis}}, L(loc));
}

Tensor dim_value(const Tensor& x, const ir::Dim& dim, std::source_location loc) {
  Builder& b = builder_of(x, "dim_value", L(loc));
  if (!dim.is_dynamic() && dim.size()) return int32_scalar(b, *dim.size(), loc);
  const Tensor lengths = cast(length(x, dim, loc), ir::DType::kFloat32, loc);
  return cast(reduce(lengths, "max", {ir::Dim::batch()}, loc), ir::DType::kInt32, loc);
}

Tensor range_of_lengths(const Tensor& lengths, const ir::Dim& new_dim, std::source_location loc) {
  return builder_of(lengths, "range_of_lengths", L(loc))
      .add(ir::NodeKind::kRangeOfLengths, {lengths}, {ir::attr::OutDim{new_dim}}, L(loc));
}

Tensor masked_scatter(const Tensor& packed, const Tensor& mask, const ir::Dim& packed_axis,
                      const ir::Dim& axis, double fill, std::source_location loc) {
  Builder& b = builder_of(packed, "masked_scatter", L(loc));
  builder_of(mask, "masked_scatter", L(loc));
  const Tensor kept =
      axis.is_dynamic() ? logical_and(mask, within_lengths(mask, axis, loc), loc) : mask;
  // A kept frame's place in the packed frames: how many kept frames precede it.
  const Tensor zero = int32_scalar(b, 0, loc);
  const Tensor ones = where(kept, int32_scalar(b, 1, loc), zero, loc);
  const Tensor place = where(kept, sub(cumsum(ones, axis, loc), ones, loc), zero, loc);
  return where(kept, gather(packed, as_indices(place, packed_axis, loc), packed_axis, loc),
               constant(b, fill, {}, loc), loc);
}

Tensor repeat(const Tensor& x, const ir::Dim& axis, const Tensor& repetitions,
              const ir::Dim& out_axis, std::source_location loc) {
  return builder_of(x, "repeat", L(loc))
      .add(ir::NodeKind::kRepeat, {x, repetitions},
           {ir::attr::Axis{axis}, ir::attr::OutDim{out_axis}}, L(loc));
}

Tensor repeat(const Tensor& x, const ir::Dim& axis, int64_t repetitions, const ir::Dim& out_axis,
              std::source_location loc) {
  if (repetitions < 0)
    fail(L(loc), absl::StrCat("repeat: the repetitions must not be negative, got ", repetitions));
  Tensor reps =
      cast(constant(x.builder(), static_cast<double>(repetitions)), ir::DType::kInt32, loc);
  return repeat(x, axis, reps, out_axis, loc);
}

namespace {

// The best class of each frame of CTC logits over `axis` (class dim classes +
// blank, blank last), the frame before's (a blank before the first), and the
// blank's index.
struct BestPath {
  Tensor best, before;
  double blank;
};

BestPath ctc_best_path(const Tensor& logits, const ir::Dim& axis, absl::string_view op,
                       std::source_location loc) {
  builder_of(logits, op, L(loc));
  std::vector<ir::Dim> classes;
  for (const ir::Dim& d : logits.dims()) {
    if (!d.is_batch() && d != axis) classes.push_back(d);
  }
  if (classes.size() != 1 || !classes[0].size() || ir::index_of(logits.dims(), axis) < 0) {
    fail(L(loc),
         absl::StrCat(op, ": the logits ", logits.type().describe(), " need the batch, the axis ",
                      axis.describe(), " and one static class dim (classes + blank)"));
  }
  const ir::Dim cls = classes[0];  // a copy: adding nodes moves types
  const double blank = static_cast<double>(*cls.size() - 1);
  Tensor best = argmax(logits, cls, loc);
  return {best, shift_right(best, axis, 1, blank, loc), blank};
}

Tensor not_blank(const BestPath& p, std::source_location loc) {
  return compare(cast(p.best, ir::DType::kFloat32, loc),
                 constant(p.best.builder(), p.blank, {}, loc), "not_equal", loc);
}

}  // namespace

Tensor ctc_greedy_decode(const Tensor& logits, const ir::Dim& axis, const ir::Dim& out_axis,
                         std::source_location loc) {
  const BestPath p = ctc_best_path(logits, axis, "ctc_greedy_decode", loc);
  // A frame is kept if its best class is no blank and differs from the
  // frame before (the first frame compares with a blank).
  Tensor keep = logical_and(compare(p.best, p.before, "not_equal", loc), not_blank(p, loc), loc);
  return masked_select(p.best, keep, axis, out_axis, loc);
}

std::pair<Tensor, Tensor> ctc_best_path_durations(const Tensor& logits, const ir::Dim& axis,
                                                  const ir::Dim& out_axis,
                                                  std::source_location loc) {
  const BestPath p = ctc_best_path(logits, axis, "ctc_best_path_durations", loc);
  Builder& b = logits.builder();
  // The runs of one class (blank runs too), along a dim of their own: each
  // run's class, whether it is a label, and its first frame.
  const Tensor starts = compare(p.best, p.before, "not_equal", loc);
  const ir::Dim runs = ir::Dim::spatial(out_axis.name() + "_runs");
  const Tensor run_class = masked_select(p.best, starts, axis, runs, loc);
  const Tensor run_labeled = masked_select(not_blank(p, loc), starts, axis, runs, loc);
  const Tensor first =
      masked_select(where(starts, range_in_axis(p.best, axis, loc), int32_scalar(b, 0, loc), loc),
                    starts, axis, runs, loc);
  // A run lasts until the next one's first frame, the last one until the
  // sequence's end.
  const Tensor one = int32_scalar(b, 1, loc);
  const Tensor after = add(range_in_axis(first, runs, loc), one, loc);
  const Tensor n = length(first, runs, loc);
  const Tensor next = maximum(minimum(after, sub(n, one, loc), loc), int32_scalar(b, 0, loc), loc);
  const Tensor end = where(compare(after, n, "greater_equal", loc), length(p.best, axis, loc),
                           gather(first, as_indices(next, runs, loc), runs, loc), loc);
  const Tensor frames = sub(end, first, loc);
  return {masked_select(run_class, run_labeled, runs, out_axis, loc),
          masked_select(frames, run_labeled, runs, out_axis, loc)};
}

Tensor cond(const Tensor& pred, const std::function<Tensor()>& then_fn,
            const std::function<Tensor()>& else_fn, std::source_location loc) {
  Builder& b = builder_of(pred, "cond", L(loc));
  const int32_t id = b.begin_cond(L(loc));
  b.set_branch(id, 0);
  Tensor a = then_fn();
  b.set_branch(id, 1);
  Tensor c = else_fn();
  b.end_cond();
  if (!a.defined() || !c.defined()) fail(L(loc), "cond: a branch returned no value");
  return b.add(ir::NodeKind::kCond, {pred, a, c}, {ir::attr::Cond{int64_t{id}}}, L(loc));
}

Tensor one_hot(const Tensor& ids, std::source_location loc) {
  Builder& b = builder_of(ids, "one_hot", L(loc));
  if (!ids.type().sparse_dim) {
    fail(L(loc), absl::StrCat("one_hot: ids ", ids.type().describe(), " must be sparse"));
  }
  Tensor r = range(b, *ids.type().sparse_dim, loc);
  if (ids.type().dtype != r.type().dtype) {
    fail(L(loc), absl::StrCat("one_hot: ids ", ids.type().describe(), " must be int32"));
  }
  return cast(compare(ids, r, "equal", loc), ir::DType::kFloat32, loc);
}

namespace {

ir::Attrs loss_attrs(const LossOptions& opts, bool cross_entropy, const ir::SourceLoc& loc) {
  if (opts.as_error) fail(loc, "as_error applies to custom_loss only");
  ir::Attrs a;
  if (opts.normalize) a.set<ir::attr::Normalize>(true);
  if (opts.scale != 1.0) a.set<ir::attr::Scale>(opts.scale);
  if (opts.label_smoothing != 0.0) {
    if (!cross_entropy) fail(loc, "label smoothing applies to the cross-entropy loss only");
    a.set<ir::attr::LabelSmoothing>(opts.label_smoothing);
  }
  if (opts.focal_loss_factor != 0.0) {
    if (!cross_entropy) fail(loc, "the focal loss factor applies to the cross-entropy loss only");
    a.set<ir::attr::FocalLossFactor>(opts.focal_loss_factor);
  }
  return a;
}

Tensor regression_loss(const Tensor& prediction, const Tensor& target, const char* mode,
                       const LossOptions& opts, std::source_location loc) {
  ir::Attrs attrs = loss_attrs(opts, false, L(loc));
  attrs.set<ir::attr::Mode>(std::string(mode));
  return builder_of(prediction, "regression loss", L(loc))
      .add(ir::NodeKind::kRegressionLoss, {prediction, target}, std::move(attrs), L(loc));
}

}  // namespace

Tensor softmax_cross_entropy(const Tensor& logits, const Tensor& targets, LossOptions opts,
                             std::source_location loc) {
  return builder_of(logits, "softmax_cross_entropy", L(loc))
      .add(ir::NodeKind::kCrossEntropy, {logits, targets}, loss_attrs(opts, true, L(loc)), L(loc));
}

Tensor ctc_loss(const Tensor& logits, const Tensor& targets, const ir::Dim& axis, LossOptions opts,
                std::source_location loc) {
  ir::Attrs attrs = loss_attrs(opts, false, L(loc));
  attrs.set<ir::attr::Axis>(axis);
  return builder_of(logits, "ctc_loss", L(loc))
      .add(ir::NodeKind::kCtcLoss, {logits, targets}, std::move(attrs), L(loc));
}

Tensor custom_loss(const Tensor& value, LossOptions opts, std::source_location loc) {
  if (opts.label_smoothing != 0.0)
    fail(L(loc), "label smoothing applies to the cross-entropy loss only");
  if (opts.focal_loss_factor != 0.0)
    fail(L(loc), "the focal loss factor applies to the cross-entropy loss only");
  ir::Attrs attrs;
  if (opts.scale != 1.0) attrs.set<ir::attr::Scale>(opts.scale);
  if (opts.as_error) attrs.set<ir::attr::AsError>(true);
  if (opts.normalize) attrs.set<ir::attr::Normalize>(true);
  return builder_of(value, "custom_loss", L(loc))
      .add(ir::NodeKind::kCustomLoss, {value}, std::move(attrs), L(loc));
}

Tensor mean_squared_error(const Tensor& prediction, const Tensor& target, LossOptions opts,
                          std::source_location loc) {
  return regression_loss(prediction, target, "mse", opts, loc);
}

Tensor mean_absolute_error(const Tensor& prediction, const Tensor& target, LossOptions opts,
                           std::source_location loc) {
  return regression_loss(prediction, target, "mean_l1", opts, loc);
}

Tensor lstm(const Tensor& x, const Tensor& w, const Tensor& w_re, const Tensor& b,
            const ir::Dim& axis, const ir::Dim& out_dim, bool backward, std::source_location loc,
            const Tensor* h0, const Tensor* c0) {
  std::vector<Tensor> inputs{x, w, w_re, b};
  if ((h0 == nullptr) != (c0 == nullptr))
    fail(L(loc), "lstm: the initial state needs both h and c");
  if (h0) {
    inputs.push_back(*h0);
    inputs.push_back(*c0);
  }
  return builder_of(x, "lstm", L(loc))
      .add(ir::NodeKind::kLstm, inputs,
           {ir::attr::Axis{axis}, ir::attr::OutDim{out_dim},
            ir::attr::Direction{int64_t{backward ? -1 : 1}}},
           L(loc));
}

Tensor lstm_final_state(const Tensor& lstm_out, const std::string& state,
                        std::source_location loc) {
  return builder_of(lstm_out, "lstm_final_state", L(loc))
      .add(ir::NodeKind::kLstmFinal, {lstm_out}, {ir::attr::State{state}}, L(loc));
}

Tensor fused_self_attention(const Tensor& x, const Tensor& qkv, const Tensor* rel_pos,
                            const ir::Dim& axis, const FusedAttention& a,
                            std::source_location loc) {
  ir::Attrs attrs{ir::attr::Axis{axis}, ir::attr::NumHeads{a.num_heads},
                  ir::attr::KeyDim{a.key_dim}, ir::attr::OutDim{a.value_dim},
                  ir::attr::Causal{a.causal}};
  if (a.att_dropout != 0.0) attrs.set<ir::attr::AttDropout>(a.att_dropout);
  std::vector<Tensor> inputs{x, qkv};
  if (a.rel_pos_clipping > 0) {
    if (!rel_pos) fail(L(loc), "fused_self_attention: relative positions need their table");
    attrs.set<ir::attr::Clipping>(a.rel_pos_clipping);
    inputs.push_back(*rel_pos);
  }
  return builder_of(x, "self_attention", L(loc))
      .add(ir::NodeKind::kSelfAttention, inputs, std::move(attrs), L(loc));
}

Tensor transposed_conv(const Tensor& x, const Tensor& weight, const Tensor* bias,
                       const TransposedConvSpec& spec, std::source_location loc) {
  std::vector<Tensor> inputs{x, weight};
  if (bias) inputs.push_back(*bias);
  return builder_of(x, "transposed_conv", L(loc))
      .add(ir::NodeKind::kTransposedConv, inputs,
           {ir::attr::Axes{spec.axes}, ir::attr::OutAxes{spec.out_axes},
            ir::attr::Strides{spec.strides}, ir::attr::Padding{spec.padding}},
           L(loc));
}

ir::Dim transposed_dim(const ir::Dim& axis, int64_t window, int64_t stride,
                       const std::string& padding) {
  if (stride == 1 && (padding == "same" || window == 1)) return axis;
  std::string name = absl::StrCat(axis.name(), "_t", stride);
  if (!axis.size()) return ir::Dim::spatial(name);
  int64_t n =
      *axis.size() * stride + (padding == "valid" ? std::max<int64_t>(window - stride, 0) : 0);
  return axis.is_feature_like() ? ir::Dim::feature(name, n) : ir::Dim::spatial(name, n);
}

Tensor replace_dim(const Tensor& x, const ir::Dim& axis, const Tensor& like, const ir::Dim& new_dim,
                   std::source_location loc) {
  return builder_of(x, "replace_dim", L(loc))
      .add(ir::NodeKind::kReplaceDim, {x, like}, {ir::attr::Axis{axis}, ir::attr::OutDim{new_dim}},
           L(loc));
}

Tensor stack(const std::vector<Tensor>& xs, std::optional<ir::Dim> out_dim,
             std::source_location loc) {
  if (xs.empty()) fail(L(loc), "stack: needs at least one tensor");
  if (!out_dim) out_dim = ir::Dim::spatial("stacked", static_cast<int64_t>(xs.size()));
  return builder_of(xs[0], "stack", L(loc))
      .add(ir::NodeKind::kStack, xs, {ir::attr::OutDim{*out_dim}}, L(loc));
}

std::vector<Tensor> unstack(const Tensor& x, const ir::Dim& axis, std::source_location loc) {
  if (!axis.size() || axis.is_dynamic() || ir::index_of(x.dims(), axis) < 0)
    fail(L(loc), absl::StrCat("unstack: the axis ", axis.describe(), " must be a static axis of ",
                              ir::describe(x.dims())));
  // Entry i: the slice [i, i + 1) of the axis, summed over its one entry.
  const ir::Dim one = ir::Dim::spatial(absl::StrCat(axis.name(), "_entry"), 1);
  std::vector<Tensor> out;
  for (int64_t i = 0; i < *axis.size(); ++i)
    out.push_back(reduce(slice(x, axis, i, one, loc), "sum", {one}, loc));
  return out;
}

Tensor window(const Tensor& x, const ir::Dim& axis, const ir::Dim& window_dim, int64_t stride,
              std::string padding, std::source_location loc) {
  const int64_t w = window_dim.size().value_or(1);
  const ir::Dim out_axis = windowed_dim(axis, w, stride, 1, padding);
  // Frames past each sequence's end count as 0 in the windows (on both targets).
  const Tensor in = axis.is_dynamic() ? mask_padding(x, axis, 0.0, loc) : x;
  return builder_of(x, "window", L(loc))
      .add(ir::NodeKind::kWindow, {in},
           {ir::attr::Axis{axis}, ir::attr::WindowDim{window_dim}, ir::attr::OutAxis{out_axis},
            ir::attr::Stride{stride}, ir::attr::Padding{std::move(padding)}},
           L(loc));
}

Tensor inverse_window(const Tensor& x, const ir::Dim& axis, const ir::Dim& window_dim,
                      const Tensor& like, const ir::Dim& out_axis, int64_t stride,
                      const std::string& padding, std::source_location loc) {
  Builder& b = builder_of(x, "inverse_window", L(loc));
  builder_of(like, "inverse_window", L(loc));
  if (padding != "same" && padding != "valid")
    fail(L(loc), absl::StrCat("inverse_window: padding must be \"same\" or \"valid\", got \"",
                              padding, "\""));
  if (stride < 1) fail(L(loc), "inverse_window: the stride must be at least 1");
  if (ir::index_of(x.dims(), axis) < 0 || !axis.is_dynamic() || axis.is_batch() ||
      ir::index_of(x.dims(), window_dim) < 0 || window_dim.is_dynamic() || !window_dim.size() ||
      !out_axis.is_dynamic() || ir::index_of(like.dims(), out_axis) < 0 ||
      (out_axis != axis && ir::index_of(x.dims(), out_axis) >= 0))
    fail(L(loc),
         absl::StrCat("inverse_window: the windows ", x.type().describe(),
                      " need the dynamic axis ", axis.describe(), " and the static window dim ",
                      window_dim.describe(), ", and ", like.type().describe(),
                      " the dynamic out axis ", out_axis.describe()));
  if (!ir::is_floating(x.type().dtype) || x.type().sparse_dim)
    fail(L(loc),
         absl::StrCat("inverse_window: the windows must be float, got ", x.type().describe()));
  // Frame t is the mean of the window entries (t', w) with t' * stride + w -
  // left = t: the k = 0 .. n - 1 of t' = (t + shift) // stride + k, w = (n -
  // 1 - k) * stride + (t + shift) mod stride (shift = left - (n - 1) *
  // stride), where t' is a window of the sequence and w within the window;
  // two gathers (the window, then the entry in it).
  const int64_t w = *window_dim.size(), n = (w + stride - 1) / stride;
  const int64_t left = padding == "same" ? (w - 1) / 2 : 0;
  const ir::Dim overlaps = ir::Dim::spatial("overlaps", n);
  auto i32 = [&](int64_t v) { return int32_scalar(b, v, loc); };
  const Tensor ts = add(positions(like, out_axis, loc), i32(left - (n - 1) * stride), loc);
  const Tensor k = positions(like, overlaps, loc);
  const Tensor win = add(floor_div(ts, i32(stride), loc), k, loc);
  const Tensor off =
      add(mul(sub(i32(n - 1), k, loc), i32(stride), loc), mod(ts, i32(stride), loc), loc);
  const Tensor valid =
      logical_and(logical_and(compare(win, i32(0), "greater_equal", loc),
                              compare(win, length(x, axis, loc), "less", loc), loc),
                  logical_and(compare(off, i32(0), "greater_equal", loc),
                              compare(off, i32(w), "less", loc), loc),
                  loc);
  const Tensor windows =
      gather(x, as_indices(where(valid, win, i32(0), loc), axis, loc), axis, loc);
  const Tensor entries =
      gather(windows, as_indices(where(valid, off, i32(0), loc), window_dim, loc), window_dim, loc);
  const Tensor zero = scalar_like(x, 0.0, loc);
  const Tensor sum = reduce(where(valid, entries, zero, loc), "sum", {overlaps}, loc);
  const Tensor count = reduce(cast(valid, x.type().dtype, loc), "sum", {overlaps}, loc);
  return div(sum, maximum(count, scalar_like(x, 1.0, loc), loc), loc);
}

Tensor raw_layer(const std::vector<Tensor>& inputs, const RawLayer& spec,
                 std::source_location loc) {
  if (inputs.empty()) fail(L(loc), "raw_layer: needs at least one input");
  ir::Attrs attrs{ir::attr::Layer{spec.layer}, ir::attr::LayerDims{spec.layer_dims},
                  ir::attr::OutDims{spec.out_dims},
                  ir::attr::DType{std::string(ir::dtype_name(spec.dtype))}};
  if (spec.sparse_dim) attrs.set<ir::attr::SparseDim>(*spec.sparse_dim);
  return builder_of(inputs[0], "raw_layer", L(loc))
      .add(ir::NodeKind::kRawLayer, inputs, std::move(attrs), L(loc));
}

Tensor logical_not(const Tensor& x, std::source_location loc) {
  return builder_of(x, "logical_not", L(loc)).add(ir::NodeKind::kLogicalNot, {x}, {}, L(loc));
}

Tensor cumsum(const Tensor& x, const ir::Dim& axis, std::source_location loc) {
  return builder_of(x, "cumsum", L(loc))
      .add(ir::NodeKind::kCumsum, {x}, {ir::attr::Axis{axis}}, L(loc));
}

Tensor edit_distance(const Tensor& a, const ir::Dim& axis_a, const Tensor& b, const ir::Dim& axis_b,
                     std::source_location loc) {
  Builder& builder = builder_of(a, "edit_distance", L(loc));
  builder_of(b, "edit_distance", L(loc));
  return builder.add(ir::NodeKind::kEditDistance, {a, b},
                     {ir::attr::AxisA{axis_a}, ir::attr::AxisB{axis_b}}, L(loc));
}

Tensor log_cumsum_exp(const Tensor& x, const ir::Dim& axis, std::source_location loc) {
  Builder& b = builder_of(x, "log_cumsum_exp", L(loc));
  // Padding frames set to 0 first: a running op reads no later frame, but its
  // gradient must not meet inf or NaN there.
  const Tensor in =
      axis.is_dynamic() && ir::index_of(x.dims(), axis) >= 0 ? mask_padding(x, axis, 0.0, loc) : x;
  return b.add(ir::NodeKind::kLogCumsumExp, {in}, {ir::attr::Axis{axis}}, L(loc));
}

std::pair<Tensor, Tensor> top_k(const Tensor& x, const ir::Dim& axis, const ir::Dim& k_dim,
                                std::source_location loc) {
  Builder& b = builder_of(x, "top_k", L(loc));
  auto node = [&](bool indices) {
    return b.add(ir::NodeKind::kTopK, {x},
                 {ir::attr::Axis{axis}, ir::attr::KDim{k_dim}, ir::attr::Indices{indices}}, L(loc));
  };
  return {node(false), node(true)};
}

std::pair<Tensor, std::vector<Tensor>> top_k(const Tensor& x, const std::vector<ir::Dim>& axes,
                                             const ir::Dim& k_dim, std::source_location loc) {
  Builder& b = builder_of(x, "top_k", L(loc));
  // The axes merged (the first the most significant), and each index from the merged one.
  std::string name;
  int64_t size = 1;
  for (const ir::Dim& a : axes) {
    absl::StrAppend(&name, name.empty() ? "" : "_x_", a.name());
    size *= a.size().value_or(0);
  }
  const ir::Dim merged = ir::Dim::feature(name, size);
  auto [values, flat] = top_k(merge_dims(x, axes, merged, loc), merged, k_dim, loc);
  const Tensor index = cast(flat, ir::DType::kInt32, loc);
  std::vector<Tensor> at;
  int64_t stride = size;
  for (const ir::Dim& a : axes) {
    stride /= std::max<int64_t>(a.size().value_or(1), 1);
    at.push_back(as_indices(mod(floor_div(index, int32_scalar(b, stride, loc), loc),
                                int32_scalar(b, *a.size(), loc), loc),
                            a, loc));
  }
  return {values, at};
}

Tensor pad(const Tensor& x, const ir::Dim& axis, int64_t left, int64_t right, double value,
           std::optional<ir::Dim> out_dim, std::source_location loc) {
  if (!out_dim) {
    const std::string name = absl::StrCat(axis.name(), "_pad", left, "_", right);
    out_dim = axis.is_dynamic() ? ir::Dim::spatial(name)
              : axis.is_feature_like()
                  ? ir::Dim::feature(name, axis.size().value_or(0) + left + right)
                  : ir::Dim::spatial(name, axis.size().value_or(0) + left + right);
  }
  return builder_of(x, "pad", L(loc))
      .add(ir::NodeKind::kPad, {x},
           {ir::attr::Axis{axis}, ir::attr::Left{left}, ir::attr::Right{right},
            ir::attr::Value{value}, ir::attr::OutDim{*out_dim}},
           L(loc));
}

Tensor replace_dim(const Tensor& x, const ir::Dim& axis, const ir::Dim& new_dim,
                   std::source_location loc) {
  return builder_of(x, "replace_dim", L(loc))
      .add(ir::NodeKind::kReplaceDim, {x}, {ir::attr::Axis{axis}, ir::attr::OutDim{new_dim}},
           L(loc));
}

Tensor conv(const Tensor& x, const Tensor& weight, const Tensor& bias, const ConvSpec& spec,
            std::source_location loc) {
  return builder_of(x, "conv", L(loc))
      .add(ir::NodeKind::kConv, {x, weight, bias},
           {ir::attr::Axes{spec.axes}, ir::attr::OutAxes{spec.out_axes},
            ir::attr::Strides{spec.strides}, ir::attr::Dilation{spec.dilation},
            ir::attr::Padding{spec.padding}, ir::attr::Groups{spec.groups}},
           L(loc));
}

Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& scale, const Tensor& bias, const ir::Dim& axis, double epsilon,
                  double momentum, bool masked, std::source_location loc) {
  ir::Attrs attrs = {ir::attr::Axis{axis}, ir::attr::Epsilon{epsilon},
                     ir::attr::Momentum{momentum}};
  if (!masked) attrs.set<ir::attr::Unmasked>(true);
  return builder_of(x, "batch_norm", L(loc))
      .add(ir::NodeKind::kBatchNorm, {x, running_mean, running_var, scale, bias}, std::move(attrs),
           L(loc));
}

}  // namespace retc::nn
