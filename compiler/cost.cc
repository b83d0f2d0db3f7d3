#include "compiler/cost.h"

#include <algorithm>
#include <cmath>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "ir/loops.h"
#include "ir/status_macros.h"

namespace retc {
namespace {

using ir::Dim;
using ir::Node;
using ir::NodeId;
using ir::NodeKind;

// Sizes of the graph's dims, as the CostOptions and the nodes give them.
class DimSizes {
 public:
  explicit DimSizes(const CostOptions& opts) : opts_(opts) {}

  // The size of `d`, if known (static, given, derived from known ones).
  std::optional<int64_t> find(const Dim& d) const {
    if (d.is_batch()) return opts_.batch;
    if (auto s = d.size()) return *s;
    if (auto it = sizes_.find(d.identity()); it != sizes_.end()) return it->second;
    switch (d.op()) {
      case Dim::Op::kAdd: {
        auto a = find(d.operands()[0]), b = find(d.operands()[1]);
        if (a && b) return *a + *b;
        return std::nullopt;
      }
      case Dim::Op::kMul:
        if (auto a = find(d.operands()[0])) return *a * d.factor();
        return std::nullopt;
      case Dim::Op::kFloorDiv:
        if (auto a = find(d.operands()[0])) return *a / d.factor();
        return std::nullopt;
      case Dim::Op::kNone:
        break;
    }
    if (auto it = opts_.dims.find(d.name()); it != opts_.dims.end()) return it->second;
    return std::nullopt;
  }

  // The size of `d`; one nothing determines is assumed (and recorded).
  int64_t get(const Dim& d) {
    if (auto s = find(d)) return *s;
    if (d.op() != Dim::Op::kNone) {
      for (const Dim& o : d.operands()) get(o);  // assumes the operands
      return *find(d);
    }
    set(d, opts_.frames);
    assumed_.push_back(absl::StrCat(d.name(), "=", opts_.frames));
    return opts_.frames;
  }

  void set(const Dim& d, int64_t size) {
    if (!find(d)) sizes_[d.identity()] = size;
  }

  double numel(const std::vector<Dim>& dims) {
    double n = 1;
    for (const Dim& d : dims) n *= static_cast<double>(get(d));
    return n;
  }

  std::vector<std::string> assumed() const { return assumed_; }

 private:
  const CostOptions& opts_;
  absl::flat_hash_map<const void*, int64_t> sizes_;
  std::vector<std::string> assumed_;
};

// The frames a strided window over `in` frames gives (conv, pool, window).
int64_t strided(int64_t in, int64_t kernel, int64_t stride, int64_t dilation,
                absl::string_view padding) {
  stride = std::max<int64_t>(stride, 1);
  if (padding == "valid") {
    const int64_t span = dilation * (kernel - 1) + 1;
    return in < span ? 0 : (in - span) / stride + 1;
  }
  return (in + stride - 1) / stride;  // same, same_consistent
}

// Gives sizes to the dims `n` makes from its input's sizes, where a rule
// says how (before any of its output's dims is looked up).
void size_new_dims(const ir::Graph& g, const Node& n, DimSizes& sizes) {
  auto in_type = [&](int i) -> const ir::TensorType& { return g.node(n.inputs[i]).type; };
  switch (n.kind) {
    case NodeKind::kConv:
    case NodeKind::kPool: {
      const auto& axes = n.attrs.get<ir::attr::Axes>();
      const auto& out = n.attrs.get<ir::attr::OutAxes>();
      const auto& strides = n.attrs.get<ir::attr::Strides>();
      const auto& padding = n.attrs.get<ir::attr::Padding>();
      int64_t dilation = 1;
      if (auto* d = n.attrs.find<ir::attr::Dilation>()) dilation = *d;
      for (size_t i = 0; i < axes.size() && i < out.size(); ++i) {
        int64_t kernel = 1;
        if (n.kind == NodeKind::kConv) {
          kernel = sizes.get(in_type(1).dims[i]);
        } else if (i < n.attrs.get<ir::attr::Size>().size()) {
          kernel = n.attrs.get<ir::attr::Size>()[i];
        }
        const int64_t stride = i < strides.size() ? strides[i] : 1;
        sizes.set(out[i], strided(sizes.get(axes[i]), kernel, stride, dilation, padding));
      }
      break;
    }
    case NodeKind::kTransposedConv: {
      const auto& axes = n.attrs.get<ir::attr::Axes>();
      const auto& out = n.attrs.get<ir::attr::OutAxes>();
      const auto& strides = n.attrs.get<ir::attr::Strides>();
      for (size_t i = 0; i < axes.size() && i < out.size(); ++i) {
        const int64_t stride = i < strides.size() ? strides[i] : 1;
        sizes.set(out[i], sizes.get(axes[i]) * stride);
      }
      break;
    }
    case NodeKind::kWindow:
      sizes.set(n.attrs.get<ir::attr::OutAxis>(),
                strided(sizes.get(n.attrs.get<ir::attr::Axis>()),
                        sizes.get(n.attrs.get<ir::attr::WindowDim>()),
                        n.attrs.get<ir::attr::Stride>(), 1, n.attrs.get<ir::attr::Padding>()));
      break;
    case NodeKind::kPad:
      sizes.set(n.attrs.get<ir::attr::OutDim>(), sizes.get(n.attrs.get<ir::attr::Axis>()) +
                                                     n.attrs.get<ir::attr::Left>() +
                                                     n.attrs.get<ir::attr::Right>());
      break;
    case NodeKind::kConcat:
      sizes.set(n.attrs.get<ir::attr::OutDim>(), sizes.get(n.attrs.get<ir::attr::AxisA>()) +
                                                     sizes.get(n.attrs.get<ir::attr::AxisB>()));
      break;
    case NodeKind::kReplaceDim:
    case NodeKind::kMaskedSelect:  // at most all frames
      sizes.set(n.attrs.get<ir::attr::OutDim>(), sizes.get(n.attrs.get<ir::attr::Axis>()));
      break;
    case NodeKind::kSlice:
      sizes.set(n.attrs.get<ir::attr::OutDim>(),
                sizes.get(n.attrs.get<ir::attr::Axis>()) - n.attrs.get<ir::attr::Start>());
      break;
    default:
      break;  // the output's new dims, if any, are assumed
  }
}

// FLOPs per element of kinds that are not contractions (forward).
double per_element(const Node& n) {
  switch (n.kind) {
    case NodeKind::kSoftmax:
    case NodeKind::kLogCumsumExp:
      return 3;
    case NodeKind::kNormalize:
      return 5;
    case NodeKind::kBatchNorm:
      return 4;
    case NodeKind::kNorm:
    case NodeKind::kWeightNorm:
      return 2;
    case NodeKind::kCrossEntropy:
      return 4;
    case NodeKind::kCtcLoss:
      return 4;
    case NodeKind::kRegressionLoss:
    case NodeKind::kDropout:
    case NodeKind::kWeightDropout:
    case NodeKind::kWeightNoise:
      return 2;
    // Views, copies, index work and bookkeeping: no arithmetic.
    case NodeKind::kData:
    case NodeKind::kParam:
    case NodeKind::kConstant:
    case NodeKind::kRange:
    case NodeKind::kRangeOfLengths:
    case NodeKind::kCast:
    case NodeKind::kGather:
    case NodeKind::kConcat:
    case NodeKind::kSlice:
    case NodeKind::kSplitDims:
    case NodeKind::kMergeDims:
    case NodeKind::kReplaceDim:
    case NodeKind::kPad:
    case NodeKind::kStack:
    case NodeKind::kWindow:
    case NodeKind::kRepeat:
    case NodeKind::kMaskedSelect:
    case NodeKind::kShiftAxis:
    case NodeKind::kScaleGrad:
    case NodeKind::kLength:
    case NodeKind::kTrainFlag:
    case NodeKind::kTrainStep:
    case NodeKind::kLoopUnstack:
    case NodeKind::kLoopState:
    case NodeKind::kLoopNext:
    case NodeKind::kLoopStack:
    case NodeKind::kLoopEnd:
    case NodeKind::kCumConcat:
    case NodeKind::kLstmFinal:
    case NodeKind::kCond:
    case NodeKind::kRawLayer:
    case NodeKind::kParamAssign:
    case NodeKind::kEditDistance:
      return 0;
    default:
      return 1;
  }
}

// Whether a kind's output carries a gradient back to its inputs.
bool differentiable(NodeKind k) {
  switch (k) {
    case NodeKind::kCompare:
    case NodeKind::kRange:
    case NodeKind::kRangeOfLengths:
    case NodeKind::kLength:
    case NodeKind::kTopK:
    case NodeKind::kChoice:
    case NodeKind::kEditDistance:
    case NodeKind::kLogicalNot:
    case NodeKind::kLogicalAnd:
    case NodeKind::kLogicalOr:
    case NodeKind::kFloorDiv:
    case NodeKind::kMod:
    case NodeKind::kParamAssign:
    case NodeKind::kFreshRandom:
    case NodeKind::kRandom:
    case NodeKind::kConstant:
    case NodeKind::kData:
    case NodeKind::kTrainFlag:
    case NodeKind::kTrainStep:
      return false;
    default:
      return true;
  }
}

// Activation functions whose gradient reads their output (torch saves it);
// the others read their input.
bool saves_output(absl::string_view func) {
  return func == "relu" || func == "sigmoid" || func == "tanh" || func == "exp" || func == "sqrt" ||
         func == "rsqrt";
}

// Kinds whose output is a view of input 0 (no memory of its own).
bool is_view(NodeKind k) {
  return k == NodeKind::kSplitDims || k == NodeKind::kMergeDims || k == NodeKind::kReplaceDim ||
         k == NodeKind::kScaleGrad || k == NodeKind::kLoopUnstack;
}

double dtype_bytes(ir::DType t) {
  switch (t) {
    case ir::DType::kBool:
      return 1;
    case ir::DType::kInt64:
    case ir::DType::kFloat64:
      return 8;
    case ir::DType::kFloat16:
      return 2;
    default:
      return 4;
  }
}

}  // namespace

absl::StatusOr<CostReport> analyze_cost(const ir::Graph& g, const CostOptions& opts) {
  if (opts.batch < 1 || opts.frames < 1) {
    return absl::InvalidArgumentError("the batch and the frames must be positive");
  }
  ASSIGN_OR_RETURN(ir::LoopAnalysis loops, ir::analyze_loops(g));
  DimSizes sizes(opts);
  CostReport report;

  // The data's dynamic dims are given; the input's frames are the first
  // data node's first dynamic dim.
  bool found = false;
  for (const Node& n : g.nodes()) {
    if (n.kind != NodeKind::kData) continue;
    for (const Dim& d : n.type.dims) {
      if (d.is_batch() || !d.is_dynamic()) continue;
      sizes.set(d, opts.frames);
      if (!found) report.input_frames = opts.batch * sizes.get(d);
      found = true;
    }
  }

  // Without a loss nothing runs backward (eval, forward, search).
  const bool training = std::any_of(g.marks().begin(), g.marks().end(), [](const ir::Mark& m) {
    return m.kind == ir::Mark::Kind::kLoss;
  });
  const size_t num = g.size();
  std::vector<bool> grad(num, false);  // the value needs a gradient
  std::vector<double> fwd(num, 0), bwd(num, 0);
  std::vector<int32_t> base(num);  // the value a view views
  // Values the backward pass reads: (value, bytes), each once.
  absl::flat_hash_map<int32_t, double> saved;
  std::vector<int32_t> saved_by(num, -1);  // which node's backward saved a value first
  absl::flat_hash_set<std::string> uncounted;

  // The frames a node's value stands for: its loop's (a loop's value is one
  // frame), else 1.
  auto loop_frames = [&](size_t v) {
    const int32_t loop = loops.loop_of[v];
    return loop >= 0 && loops.loops[loop].axis
               ? static_cast<double>(sizes.get(*loops.loops[loop].axis))
               : 1.0;
  };
  // A gradient-checkpointed module's nodes: computed again in the backward pass.
  auto checkpointed = [&](const Node& n) {
    return std::any_of(
        g.checkpoints().begin(), g.checkpoints().end(),
        [&](const ir::Checkpoint& c) { return ir::in_checkpoint(c, n.module_path); });
  };

  for (size_t i = 0; i < num; ++i) {
    const Node& n = g.node(g.id_of(i));
    base[i] = static_cast<int32_t>(i);
    if (n.stage != ir::Stage::kStep) continue;
    size_new_dims(g, n, sizes);
    const double frames = loop_frames(i);
    const double out_n = sizes.numel(n.type.dims) * frames;
    auto in_node = [&](int k) -> const Node& { return g.node(n.inputs[k]); };
    auto in_n = [&](int k) { return sizes.numel(in_node(k).type.dims) * frames; };
    auto in_grad = [&](int k) { return grad[n.inputs[k].index]; };
    auto bytes = [&](int32_t v) {
      const Node& m = g.node(g.id_of(v));
      return sizes.numel(m.type.dims) * dtype_bytes(m.type.dtype) * loop_frames(v);
    };
    // A gradient-checkpointed module keeps only its inputs from outside it;
    // what its backward reads is computed again then.
    const bool recomputed = checkpointed(n);
    auto keep = [&](int32_t b) {
      if (g.node(g.id_of(b)).kind == NodeKind::kParam || saved.contains(b)) return;
      saved[b] = bytes(b);
      saved_by[b] = static_cast<int32_t>(i);
    };
    if (recomputed) {
      for (const NodeId& in : n.inputs) {
        const Node& m = g.node(in);
        const bool inside = checkpointed(m);
        if (!inside && m.stage == ir::Stage::kStep && grad[in.index]) keep(base[in.index]);
      }
    }
    // The backward pass reads value v (a view: what it views).
    auto save = [&](int32_t v) {
      if (!recomputed) keep(base[v]);
    };
    auto save_composite = [&](double b) {
      if (!recomputed) saved[-1 - static_cast<int32_t>(i)] = b;
    };
    auto save_input = [&](int k) { save(n.inputs[k].index); };

    bool any_grad = false;
    for (size_t k = 0; k < n.inputs.size(); ++k)
      any_grad = any_grad || in_grad(static_cast<int>(k));
    if (n.kind == NodeKind::kParam) {
      grad[i] = training && g.param(n.param).options.trainable;
    } else {
      grad[i] = any_grad && differentiable(n.kind) && ir::is_floating(n.type.dtype);
    }
    if (is_view(n.kind) && !n.inputs.empty()) base[i] = base[n.inputs[0].index];

    double contraction = 0;  // multiply-adds * 2 of the contractions
    int grad_operands = 0;   // of the contraction's two operands
    switch (n.kind) {
      case NodeKind::kDot: {
        double reduce = 1;
        for (const Dim& d : n.attrs.get<ir::attr::Reduce>()) reduce *= sizes.get(d);
        contraction = 2 * out_n * reduce;
        grad_operands = in_grad(0) + in_grad(1);
        if (in_grad(1)) save_input(0);
        if (in_grad(0)) save_input(1);
        break;
      }
      case NodeKind::kConv: {
        const auto& w = in_node(1).type.dims;
        double per_out = 1;  // kernel * in / groups
        for (size_t k = 0; k + 1 < w.size(); ++k) per_out *= sizes.get(w[k]);
        contraction = 2 * out_n * per_out;
        grad_operands = in_grad(0) + in_grad(1);
        if (in_grad(1)) save_input(0);
        fwd[i] = out_n;  // the bias
        break;
      }
      case NodeKind::kTransposedConv: {
        const auto& w = in_node(1).type.dims;
        double per_in = 1;  // kernel * out
        for (size_t k = 0; k + 1 < w.size(); ++k) per_in *= sizes.get(w[k]);
        contraction = 2 * in_n(0) * per_in;
        grad_operands = in_grad(0) + in_grad(1);
        if (in_grad(1)) save_input(0);
        break;
      }
      case NodeKind::kSelfAttention: {
        // x [.., T, in] @ W [in, 2K+V]; per head q.k and (with a rel-pos
        // table) q.r over T x T, then weights.v: RETURNN's self_attention.
        const double t = static_cast<double>(sizes.get(n.attrs.get<ir::attr::Axis>()));
        const double in = static_cast<double>(sizes.get(in_node(1).type.dims[0]));
        const double qkv = static_cast<double>(sizes.get(in_node(1).type.dims[1]));
        const double heads = static_cast<double>(n.attrs.get<ir::attr::NumHeads>());
        const double key = static_cast<double>(sizes.get(n.attrs.get<ir::attr::KeyDim>()));
        const double value = static_cast<double>(sizes.get(n.attrs.get<ir::attr::OutDim>()));
        const double rows = out_n / value;  // batch * T (* loop frames)
        const bool rel = n.inputs.size() > 2;
        const double products = 2 * rows * t * (key * (rel ? 2 : 1) + value);
        contraction = 2 * rows * in * qkv + products;
        grad_operands = (in_grad(0) || in_grad(1)) ? 2 : 0;
        fwd[i] = 5 * rows * t * heads;  // scale, mask, softmax
        if (grad[i] || any_grad) {
          // x, the projection (q scaled again), the weights (and the mask and
          // the rel-pos encodings gathered per query and key).
          save_input(0);
          save_composite(
              4 * (rows * (qkv + key) + rows * t * heads + (rel ? t * t * key / heads : 0)) +
              rows * t);
        }
        break;
      }
      case NodeKind::kLstm: {
        const double out = static_cast<double>(sizes.get(n.attrs.get<ir::attr::OutDim>()));
        const double in = static_cast<double>(sizes.get(in_node(1).type.dims[0]));
        const double rows = out_n / out;  // batch * T
        contraction = 2 * rows * (in + out) * 4 * out;
        grad_operands = 2;
        fwd[i] = 10 * rows * out;  // gates
        if (any_grad) {
          save_input(0);
          save_composite(4 * rows * out * 7);  // gates, c, h
        }
        break;
      }
      case NodeKind::kPool: {
        double window = 1;
        for (int64_t s : n.attrs.get<ir::attr::Size>()) window *= static_cast<double>(s);
        fwd[i] = out_n * window;
        if (any_grad) save_input(0);
        break;
      }
      case NodeKind::kRawLayer:
        uncounted.insert(std::string(ir::node_kind_name(n.kind)));
        break;
      default: {
        const double elems = n.inputs.empty() ? out_n : std::max(out_n, in_n(0));
        fwd[i] = per_element(n) * elems;
        break;
      }
    }
    fwd[i] += contraction;
    if (any_grad && differentiable(n.kind)) {
      bwd[i] = contraction * grad_operands + (fwd[i] - contraction);
      if (recomputed) bwd[i] += fwd[i];  // the forward again
    }
    if (!any_grad) continue;
    // What the backward passes of the other kinds read.
    switch (n.kind) {
      case NodeKind::kMul:
        if (in_grad(1)) save_input(0);
        if (in_grad(0)) save_input(1);
        break;
      case NodeKind::kDiv:
      case NodeKind::kPow:
      case NodeKind::kMinimum:
      case NodeKind::kMaximum:
        save_input(0);
        save_input(1);
        break;
      case NodeKind::kActivation:
        if (saves_output(n.attrs.get<ir::attr::Func>())) {
          save(static_cast<int32_t>(i));
        } else {
          save_input(0);
        }
        break;
      case NodeKind::kSoftmax:
      case NodeKind::kNorm:
        save(static_cast<int32_t>(i));
        break;
      case NodeKind::kCtcLoss: {  // the logits, and the forward variables [B, T, 2 L + 1]
        save_input(0);
        double labels = 1;
        for (const Dim& d : in_node(1).type.dims) labels *= d.is_batch() ? 1 : sizes.get(d);
        save_composite(4 *
                       static_cast<double>(opts.batch * sizes.get(n.attrs.get<ir::attr::Axis>())) *
                       (2 * labels + 1));
        break;
      }
      case NodeKind::kNormalize:
      case NodeKind::kBatchNorm:
      case NodeKind::kReduce:
      case NodeKind::kCrossEntropy:
      case NodeKind::kRegressionLoss:
      case NodeKind::kLogCumsumExp:
        save_input(0);
        break;
      case NodeKind::kDropout:  // the mask (float, over the attr axes)
        save_composite(4 * sizes.numel(n.attrs.get<ir::attr::Axes>()) * frames);
        break;
      case NodeKind::kWhere:  // the condition
        save_input(0);
        break;
      default:
        break;
    }
  }
  report.assumed = sizes.assumed();
  report.uncounted.assign(uncounted.begin(), uncounted.end());
  std::sort(report.uncounted.begin(), report.uncounted.end());

  // Per module: nodes by module path (and every prefix), params by theirs.
  std::map<std::string, ModuleCost> by_path;
  // f("") (the whole model), then f of every prefix of a module path.
  auto each_prefix = [](const std::string& path, auto&& f) {
    f(std::string());
    if (path.empty()) return;
    for (size_t p = path.find('.');; p = path.find('.', p + 1)) {
      f(path.substr(0, p));
      if (p == std::string::npos) break;
    }
  };
  for (size_t i = 0; i < num; ++i) {
    const Node& n = g.node(g.id_of(i));
    if (n.stage != ir::Stage::kStep) continue;
    const std::string& path = n.module_path;
    each_prefix(path, [&](const std::string& p) {
      by_path[p].forward_flops += fwd[i];
      by_path[p].backward_flops += bwd[i];
    });
  }
  for (const auto& [v, b] : saved) {
    const int32_t node = v >= 0 ? saved_by[v] : -1 - v;
    const std::string& path = g.node(g.id_of(node)).module_path;
    each_prefix(path, [&](const std::string& p) { by_path[p].activation_bytes += b; });
  }
  for (const ir::Param& p : g.params()) {
    double n = 1;
    for (const Dim& d : p.dims) n *= static_cast<double>(sizes.get(d));
    const size_t dot = p.path.rfind('.');
    const std::string module = dot == std::string::npos ? "" : p.path.substr(0, dot);
    each_prefix(module,
                [&](const std::string& q) { by_path[q].params += static_cast<int64_t>(n); });
  }
  for (auto& [path, m] : by_path) {
    m.path = path;
    m.depth = path.empty() ? 0 : 1 + static_cast<int>(std::count(path.begin(), path.end(), '.'));
    report.modules.push_back(m);
  }
  // Depth-first order: "" first, then paths with numeric parts by number.
  auto key = [](const std::string& path) {
    std::vector<std::pair<int64_t, std::string>> parts;
    size_t start = 0;
    while (start <= path.size() && !path.empty()) {
      size_t end = path.find('.', start);
      if (end == std::string::npos) end = path.size();
      std::string part = path.substr(start, end - start);
      const bool numeric = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) {
        return c >= '0' && c <= '9';
      });
      parts.emplace_back(numeric ? std::stoll(part) : -1, numeric ? std::string() : part);
      start = end + 1;
    }
    return parts;
  };
  std::stable_sort(
      report.modules.begin(), report.modules.end(),
      [&](const ModuleCost& a, const ModuleCost& b) { return key(a.path) < key(b.path); });
  return report;
}

}  // namespace retc
