// The sweep: every op and module of the library in the situations that once
// compiled in retc and then failed in RETURNN (issue 10), as test models
// "sweep:<op>:<situation>", which tests/integration/test_modules.py (test
// `sweep`) takes through `retc check`'s RETURNN side:
//   plain      the op on [B, time, feat] data, marked as an output; no loss
//              (a forward-only model);
//   broadcast  the op on operands that broadcast: binary ops on
//              [B, time, feat] and [B, other]; other ops on an outer-broadcast
//              input [B, time, feat, other] (when the op takes extra dims);
//   loop       the op inside an nn::Loop over time, on the frame plus a state
//              initialized from a constant without the batch dim, stacked;
//   state      the op inside an nn::Loop over another axis (a memory's), on a
//              state over [B, time] (accumulated attention weights), which the
//              op reads without feeding it back; for the ops that take any dims.
//   nofeat     the op on [B, time] data: no feature axis (raw audio's shape);
//              for the ops that take any dims (issue 25);
//   static     the same on [B, time] with a static time size: the only static
//              axis, which RETURNN must not take for a feature axis (issue 25:
//              TF's pool layer did);
//   mask       the op on the data where a bool extern-data mask [B, time] holds
//              (`retc check` draws random bools), else 0, with the data itself
//              and the op's value marked as outputs (issue 25: extern data as
//              an output failed on TF).
// Ops that need the time axis itself (softmax over time, convolution, ...)
// have no loop case; ops on the feature dim alone have no broadcast case
// where the extra dim would be a second feature dim they cannot take.
#include <functional>
#include <map>
#include <optional>

#include "absl/strings/str_cat.h"
#include "compiler/nn/audio.h"
#include "compiler/nn/loop.h"
#include "compiler/nn/modules.h"
#include "tests/test_models.h"

namespace retc::testing {
namespace {

using ir::Dim;
using nn::Builder;
using nn::Tensor;

// The dims every sweep model shares.
struct Dims {
  Dim time = Dim::spatial("time");
  Dim feat = Dim::feature("feat", 4);
  Dim other = Dim::feature("other", 3);
  Dim out = Dim::feature("out", 2);
  Dim vocab = Dim::feature("vocab", 5);
  Dim mem_time = Dim::spatial("mem_time");
};

// The root: a module per op that needs params, registered by the op's setup.
class SweepNet : public nn::Module {
 public:
  SweepNet() : Module("sweep") {}
  template <class M>
  void add(const std::string& name, std::shared_ptr<M> m) {
    mods_[name] = register_module(name, std::move(m));
  }
  std::shared_ptr<nn::Module> get(const std::string& name) const { return mods_.at(name); }
  /// The memory of cross-attention (extern data over its own time).
  Tensor memory;

 private:
  std::map<std::string, std::shared_ptr<nn::Module>> mods_;
};

struct Op {
  const char* name;
  bool binary = false;        // takes a second operand (broadcast: [B, other])
  bool needs_time = false;    // works along the time axis (no loop case)
  bool feature_only = false;  // takes exactly one feature dim (no broadcast case)
  std::function<void(SweepNet&, const Dims&)> setup = [](SweepNet&, const Dims&) {};
  std::function<Tensor(Builder&, SweepNet&, const Dims&, const Tensor& x, const Tensor& y,
                       const std::optional<Dim>& time)>
      apply;
};

template <class M>
std::shared_ptr<M> mod(const SweepNet& net, const char* name) {
  return std::static_pointer_cast<M>(net.get(name));
}

std::vector<Op> ops() {
  using T = const Tensor&;
  using OptDim = const std::optional<Dim>&;
  std::vector<Op> v;
  auto binary = [&](const char* name, Tensor (*f)(T, T, std::source_location)) {
    Op op{name, true};
    op.apply = [f](Builder&, SweepNet&, const Dims&, T x, T y, OptDim) {
      return f(x, y, std::source_location::current());
    };
    v.push_back(op);
  };
  binary("add", nn::add);
  binary("sub", nn::sub);
  binary("mul", nn::mul);
  binary("div", nn::div);
  binary("minimum", nn::minimum);
  binary("maximum", nn::maximum);
  // pow on the sweep's inputs (normal random, negative and padding zeros
  // too): (|x| + 0.5) ^ y.
  {
    Op op{"pow", true};
    op.apply = [](Builder& b, SweepNet&, const Dims&, T x, T y, OptDim) {
      return nn::pow(nn::add(nn::activation(x, "abs"), nn::constant(b, 0.5)), y);
    };
    v.push_back(op);
  }
  auto unary = [&](const char* name, std::function<Tensor(Builder&, const Dims&, T)> f,
                   bool needs_time = false, bool feature_only = false) {
    Op op{name, false, needs_time, feature_only};
    op.apply = [f](Builder& b, SweepNet&, const Dims& d, T x, T, OptDim) { return f(b, d, x); };
    v.push_back(op);
  };
  // Every activation that takes any real input (log, sqrt and rsqrt want positive ones).
  for (const char* func : {"relu", "tanh", "sigmoid", "gelu", "swish", "exp", "abs", "square",
                           "elu", "silu", "softplus", "negative"}) {
    std::string f = func;
    unary(func, [f](Builder&, const Dims&, T x) { return nn::activation(x, f); });
  }
  unary("dropout", [](Builder&, const Dims&, T x) { return nn::dropout(x, 0.1); });
  unary("scale_gradient", [](Builder&, const Dims&, T x) { return nn::scale_gradient(x, 0.5); });
  unary("stop_gradient", [](Builder&, const Dims&, T x) { return nn::stop_gradient(x); });
  unary("reduce_sum", [](Builder&, const Dims& d, T x) { return nn::reduce(x, "sum", {d.feat}); });
  unary("reduce_max", [](Builder&, const Dims& d, T x) { return nn::reduce(x, "max", {d.feat}); });
  unary("normalize", [](Builder&, const Dims& d, T x) { return nn::normalize(x, {d.feat}); });
  unary("log_softmax", [](Builder&, const Dims& d, T x) { return nn::log_softmax(x, d.feat); });
  unary(
      "softmax_time", [](Builder&, const Dims& d, T x) { return nn::softmax(x, d.time); }, true);
  unary(
      "reduce_mean_time",
      [](Builder&, const Dims& d, T x) { return nn::reduce(x, "mean", {d.time}); }, true);
  unary(
      "mask_padding", [](Builder&, const Dims& d, T x) { return nn::mask_padding(x, d.time); },
      true);
  unary(
      "shift_right", [](Builder&, const Dims& d, T x) { return nn::shift_right(x, d.time); }, true);
  // The frames whose values sum above 0 packed and put back in place (a mask
  // over [B, time]: masked_select packs whole frames).
  unary(
      "masked_scatter",
      [](Builder& b, const Dims& d, T x) {
        std::vector<Dim> rest;
        for (const Dim& dim : x.dims()) {
          if (!dim.is_batch() && dim != d.time) rest.push_back(dim);
        }
        const Tensor above =
            nn::compare(nn::reduce(x, "sum", rest), nn::constant(b, 0.0), "greater");
        const Dim kept = Dim::spatial("kept");
        return nn::masked_scatter(nn::masked_select(x, above, d.time, kept), above, kept, d.time);
      },
      true);
  // The frames into 2 entries (whether their features sum above 0).
  for (auto [name, mode] :
       {std::pair{"scatter_sum", "sum"}, std::pair{"scatter_max", "max"},
        std::pair{"scatter_mean", "mean"}, std::pair{"scatter_logsumexp", "logsumexp"},
        std::pair{"scatter_argmax", "argmax"}}) {
    std::string m = mode;
    unary(
        name,
        [m](Builder& b, const Dims& d, T x) {
          const Tensor above =
              nn::compare(nn::reduce(x, "sum", {d.feat}), nn::constant(b, 0.0), "greater");
          return nn::scatter(x, nn::as_indices(nn::cast(above, ir::DType::kInt32), d.out), d.time,
                             m);
        },
        true);
  }
  unary("concat", [](Builder&, const Dims& d, T x) { return nn::concat(x, d.feat, x, d.feat); });
  unary("log_cumsum_exp",
        [](Builder&, const Dims& d, T x) { return nn::log_cumsum_exp(x, d.feat); });
  unary(
      "log_cumsum_exp_time",
      [](Builder&, const Dims& d, T x) { return nn::log_cumsum_exp(x, d.time); }, true);
  // feat as 3 FFT bins (an FFT of 4), 2 mel filters at 16 kHz.
  unary("mel_filterbank",
        [](Builder&, const Dims& d, T x) { return nn::mel_filterbank(x, d.feat, d.out, 16000.0); });
  // Windows of 3 frames every 2, an FFT of 4: the power spectrum.
  unary(
      "stft",
      [](Builder&, const Dims& d, T x) { return nn::power_spectrum(nn::stft(x, d.time, 3, 2, 4)); },
      true);
  unary("slice",
        [](Builder&, const Dims& d, T x) { return nn::slice(x, d.feat, 1, Dim::feature("s", 2)); });
  unary("split_merge", [](Builder&, const Dims& d, T x) {
    Dim a = Dim::feature("a", 2), c = Dim::feature("c", 2);
    return nn::merge_dims(nn::split_dims(x, d.feat, {a, c}), {a, c}, Dim::feature("ac", 4));
  });
  unary("compare_where", [](Builder& b, const Dims&, T x) {
    return nn::where(nn::compare(x, nn::constant(b, 0.0), "greater"), x, nn::constant(b, -1.0));
  });
  unary("logical", [](Builder& b, const Dims&, T x) {
    Tensor both = nn::logical_and(nn::compare(x, nn::constant(b, 0.0), "greater"),
                                  nn::compare(x, nn::constant(b, 0.5), "less"));
    return nn::cast(nn::logical_or(both, nn::compare(x, nn::constant(b, -1.0), "less")),
                    ir::DType::kFloat32);
  });
  unary("argmax", [](Builder&, const Dims& d, T x) {
    return nn::cast(nn::argmax(x, d.feat), ir::DType::kFloat32);
  });
  unary("cast", [](Builder&, const Dims&, T x) {
    return nn::cast(nn::cast(x, ir::DType::kInt32), ir::DType::kFloat32);
  });
  unary(
      "range_in_axis",
      [](Builder&, const Dims& d, T x) {
        return x + nn::cast(nn::range_in_axis(x, d.time), ir::DType::kFloat32);
      },
      true);
  unary(
      "pos_encoding",
      [](Builder&, const Dims& d, T x) { return nn::add_positional_encoding(x, d.time); }, true,
      true);
  unary(
      "pool_max",
      [](Builder&, const Dims& d, T x) { return nn::pool(x, "max", {d.time}, {2}, {1}, "same"); },
      true);
  unary(
      "pool_avg",
      [](Builder&, const Dims& d, T x) { return nn::pool(x, "avg", {d.time}, {2}, {1}, "valid"); },
      true);
  // Floor division and modulo of floats by |y| + 0.5 (away from 0).
  for (auto [name, f] : {std::pair{"floor_div", &nn::floor_div}, std::pair{"mod", &nn::mod}}) {
    Op op{name, true};
    op.apply = [f](Builder& b, SweepNet&, const Dims&, T x, T y, OptDim) {
      return f(x, nn::add(nn::activation(y, "abs"), nn::constant(b, 0.5)),
               std::source_location::current());
    };
    v.push_back(op);
  }
  unary("argmin", [](Builder&, const Dims& d, T x) {
    return nn::cast(nn::argmin(x, d.feat), ir::DType::kFloat32);
  });
  // The 2 largest features and their indices (ties broken by a small step
  // per feature: the mask situation's zero frames would tie, whose order the
  // targets may choose differently); the feature at the argmax.
  unary("top_k", [](Builder& b, const Dims& d, T x) {
    const Tensor step = nn::cast(nn::range_in_axis(x, d.feat), ir::DType::kFloat32);
    auto [values, indices] =
        nn::top_k(x + step * nn::constant(b, 0.01), d.feat, Dim::feature("k", 2));
    return values + nn::cast(indices, ir::DType::kFloat32);
  });
  unary("gather",
        [](Builder&, const Dims& d, T x) { return nn::gather(x, nn::argmax(x, d.feat), d.feat); });
  unary("cumsum", [](Builder&, const Dims& d, T x) { return nn::cumsum(x, d.feat); });
  unary(
      "cumsum_time", [](Builder&, const Dims& d, T x) { return nn::cumsum(x, d.time); }, true);
  unary(
      "reverse_time", [](Builder&, const Dims& d, T x) { return nn::reverse(x, d.time); }, true);
  unary(
      "pad_time", [](Builder&, const Dims& d, T x) { return nn::pad(x, d.time, 1, 2, 0.5); }, true);
  unary(
      "window_time",
      [](Builder&, const Dims& d, T x) { return nn::window(x, d.time, Dim::spatial("w", 3)); },
      true);
  // Each frame's best feature as a label sequence: its edit distance to the
  // reversed sequence, and the CTC best path (feature 0 as the blank) with
  // its durations.
  unary(
      "edit_distance",
      [](Builder&, const Dims& d, T x) {
        const Tensor labels = nn::argmax(x, d.feat);
        return nn::cast(nn::edit_distance(labels, d.time, nn::reverse(labels, d.time), d.time),
                        ir::DType::kFloat32);
      },
      true, true);
  unary(
      "ctc_best_path_durations",
      [](Builder&, const Dims& d, T x) {
        auto [labels, frames] = nn::ctc_best_path_durations(x, d.time, Dim::spatial("labels"));
        return nn::cast(labels, ir::DType::kFloat32) + nn::cast(frames, ir::DType::kFloat32);
      },
      true, true);
  // The 2 largest of the features split into 2 x 2, over both axes at once
  // (ties broken as in top_k), their values and both indices.
  unary(
      "top_k_multi",
      [](Builder& b, const Dims& d, T x) {
        const Dim a = Dim::feature("a", 2), c = Dim::feature("c", 2);
        const Tensor step = nn::cast(nn::range_in_axis(x, d.feat), ir::DType::kFloat32);
        const Tensor split = nn::split_dims(x + step * nn::constant(b, 0.01), d.feat, {a, c});
        auto [values, at] = nn::top_k(split, {a, c}, Dim::feature("k", 2));
        return values + nn::cast(at[0], ir::DType::kFloat32) +
               nn::cast(at[1], ir::DType::kFloat32) * nn::constant(b, 2.0);
      },
      false, true);
  // A sparse constant (a label of 5) as a number.
  unary("sparse_constant", [](Builder& b, const Dims& d, T x) {
    return x + nn::cast(nn::sparse_constant(b, 2, d.vocab), ir::DType::kFloat32);
  });
  // Each sequence's last frame (a gather along the dynamic axis at an int
  // position per sequence); the time's padded size as a tensor; a dim of
  // computed lengths (ceil(n / 2) per sequence) whose positions gather the
  // even frames.
  unary(
      "gather_time_last",
      [](Builder& b, const Dims& d, T x) {
        const Tensor one = nn::cast(nn::constant(b, 1.0), ir::DType::kInt32);
        return nn::gather(x, nn::as_indices(nn::length(x, d.time) - one, d.time), d.time) +
               nn::cast(nn::dim_value(x, d.time), ir::DType::kFloat32);
      },
      true);
  unary(
      "dims_from_sizes",
      [](Builder& b, const Dims& d, T x) {
        auto i32 = [&](double v) { return nn::cast(nn::constant(b, v), ir::DType::kInt32); };
        const Tensor half = nn::floor_div(nn::length(x, d.time) + i32(1.0), i32(2.0));
        const Tensor pos = nn::range_of_lengths(half, Dim::spatial("halves"));
        return nn::gather(x, nn::as_indices(pos * i32(2.0), d.time), d.time);
      },
      true);
  // A loop's final state read after the loop: the running sum's last value.
  unary(
      "loop_last",
      [](Builder& b, const Dims& d, T x) {
        nn::Loop loop(b, d.time);
        Tensor acc = loop.state(nn::constant(b, 0.0, {d.feat}), {Dim::batch(), d.feat});
        Tensor sum = acc + loop.unstack(x);
        loop.next(acc, sum);
        loop.end();
        return loop.last(sum);
      },
      true, true);
  unary("train_flag_where", [](Builder& b, const Dims&, T x) {
    return nn::where(nn::train_flag(b), x, x * nn::constant(b, 2.0));
  });
  auto module = [&](const char* name, std::function<void(SweepNet&, const Dims&)> setup,
                    std::function<Tensor(SweepNet&, const Dims&, T, OptDim)> f,
                    bool needs_time = false, bool feature_only = false) {
    Op op{name, false, needs_time, feature_only, setup};
    op.apply = [f](Builder&, SweepNet& n, const Dims& d, T x, T, OptDim t) {
      return f(n, d, x, t);
    };
    v.push_back(op);
  };
  module(
      "linear",
      [](SweepNet& n, const Dims& d) { n.add("m", std::make_shared<nn::Linear>(d.feat, d.out)); },
      [](SweepNet& n, const Dims&, T x, OptDim) { return mod<nn::Linear>(n, "m")->forward(x); });
  module(
      "layer_norm",
      [](SweepNet& n, const Dims& d) { n.add("m", std::make_shared<nn::LayerNorm>(d.feat)); },
      [](SweepNet& n, const Dims&, T x, OptDim) { return mod<nn::LayerNorm>(n, "m")->forward(x); });
  module(
      "rms_norm",
      [](SweepNet& n, const Dims& d) { n.add("m", std::make_shared<nn::RmsNorm>(d.feat)); },
      [](SweepNet& n, const Dims&, T x, OptDim) { return mod<nn::RmsNorm>(n, "m")->forward(x); });
  module(
      "batch_norm",
      [](SweepNet& n, const Dims& d) { n.add("m", std::make_shared<nn::BatchNorm>(d.feat)); },
      [](SweepNet& n, const Dims&, T x, OptDim) { return mod<nn::BatchNorm>(n, "m")->forward(x); },
      false, true);
  module(
      "batch_norm_options",
      [](SweepNet& n, const Dims& d) {
        n.add("m", std::make_shared<nn::BatchNorm>(
                       d.feat, nn::BatchNormOptions().affine(false).masked(false)));
      },
      [](SweepNet& n, const Dims&, T x, OptDim) { return mod<nn::BatchNorm>(n, "m")->forward(x); },
      false, true);
  module(
      "lstm",
      [](SweepNet& n, const Dims& d) { n.add("m", std::make_shared<nn::Lstm>(d.feat, d.out)); },
      [](SweepNet& n, const Dims& d, T x, OptDim) {
        return mod<nn::Lstm>(n, "m")->forward(x, d.time);
      },
      true, true);
  module(
      "conv1d",
      [](SweepNet& n, const Dims& d) {
        n.add("m", std::make_shared<nn::Conv1d>(nn::Conv1dOptions(d.feat, d.out, 3)));
      },
      [](SweepNet& n, const Dims& d, T x, OptDim) {
        return mod<nn::Conv1d>(n, "m")->forward(x, d.time);
      },
      true, true);
  module(
      "conv1d_strided",
      [](SweepNet& n, const Dims& d) {
        n.add("m", std::make_shared<nn::Conv1d>(nn::Conv1dOptions(d.feat, d.out, 3).stride(2)));
      },
      [](SweepNet& n, const Dims& d, T x, OptDim) {
        return mod<nn::Conv1d>(n, "m")->forward(x, d.time);
      },
      true, true);
  module(
      "conv1d_consistent",
      [](SweepNet& n, const Dims& d) {
        n.add("m", std::make_shared<nn::Conv1d>(
                       nn::Conv1dOptions(d.feat, d.out, 3).stride(2).padding("same_consistent")));
      },
      [](SweepNet& n, const Dims& d, T x, OptDim) {
        return mod<nn::Conv1d>(n, "m")->forward(x, d.time);
      },
      true, true);
  module(
      "self_attention",
      [](SweepNet& n, const Dims& d) {
        n.add("m", std::make_shared<nn::SelfAttention>(
                       nn::SelfAttentionOptions(d.feat, d.feat, d.feat, 2)));
      },
      [](SweepNet& n, const Dims& d, T x, OptDim) {
        return mod<nn::SelfAttention>(n, "m")->forward(x, d.time);
      },
      true, true);
  module(
      "group_norm",
      [](SweepNet& n, const Dims& d) { n.add("m", std::make_shared<nn::GroupNorm>(d.feat, 2)); },
      [](SweepNet& n, const Dims& d, T x, OptDim) {
        return mod<nn::GroupNorm>(n, "m")->forward(x, {d.time});
      },
      true, true);
  module(
      "self_attention_bias",
      [](SweepNet& n, const Dims& d) {
        n.add("m", std::make_shared<nn::SelfAttention>(
                       nn::SelfAttentionOptions(d.feat, d.feat, d.feat, 2).qkv_bias(true)));
      },
      [](SweepNet& n, const Dims& d, T x, OptDim) {
        return mod<nn::SelfAttention>(n, "m")->forward(x, d.time);
      },
      true, true);
  module(
      "self_attention_rotary",
      [](SweepNet& n, const Dims& d) {
        n.add("m",
              std::make_shared<nn::SelfAttention>(
                  nn::SelfAttentionOptions(d.feat, d.feat, d.feat, 2).causal(true).rotary(true)));
      },
      [](SweepNet& n, const Dims& d, T x, OptDim) {
        return mod<nn::SelfAttention>(n, "m")->forward(x, d.time);
      },
      true, true);
  // The Conformer blocks (#26): the default block, one of another order with
  // Transformer-XL relative positions, and an E-Branchformer block (kernels
  // of 3, 2 heads, no dropout).
  auto conformer_opts = [] {
    return nn::ConformerOptions().num_heads(2).conv_kernel(3).merge_kernel(3).dropout(0.0);
  };
  for (auto [name, opts] :
       {std::pair{"conformer_block", conformer_opts()},
        std::pair{"conformer_block_order_xl",
                  conformer_opts().block_modules({"mhsa", "ff", "conv"}).rel_pos_xl(true)}}) {
    module(
        name,
        [opts](SweepNet& n, const Dims& d) {
          n.add("m", std::make_shared<nn::ConformerBlock>(d.feat, Dim::feature("ff", 8), opts));
        },
        [](SweepNet& n, const Dims& d, T x, OptDim) {
          return mod<nn::ConformerBlock>(n, "m")->forward(x, d.time);
        },
        true, true);
  }
  module(
      "e_branchformer_block",
      [conformer_opts](SweepNet& n, const Dims& d) {
        n.add("m", std::make_shared<nn::EBranchformerBlock>(
                       d.feat, Dim::feature("ff", 8), Dim::feature("cgmlp", 6), conformer_opts()));
      },
      [](SweepNet& n, const Dims& d, T x, OptDim) {
        return mod<nn::EBranchformerBlock>(n, "m")->forward(x, d.time);
      },
      true, true);
  module(
      "self_attention_rel_pos_causal",
      [](SweepNet& n, const Dims& d) {
        n.add("m", std::make_shared<nn::SelfAttention>(
                       nn::SelfAttentionOptions(d.feat, d.feat, d.feat, 2)
                           .causal(true)
                           .rel_pos_clipping(2)));
      },
      [](SweepNet& n, const Dims& d, T x, OptDim) {
        return mod<nn::SelfAttention>(n, "m")->forward(x, d.time);
      },
      true, true);
  module(
      "rel_pos_encoding",
      [](SweepNet& n, const Dims& d) {
        n.add("m", std::make_shared<nn::RelPosEncoding>(d.out, 2));
      },
      [](SweepNet& n, const Dims& d, T x, OptDim) {
        const Dim keys = Dim::spatial("keys");
        return mod<nn::RelPosEncoding>(n, "m")->forward(x, d.time, nn::replace_dim(x, d.time, keys),
                                                        keys);
      },
      true, true);
  unary(
      "sinusoidal_rel_pos_encoding",
      [](Builder&, const Dims& d, T x) {
        const Dim keys = Dim::spatial("keys");
        return nn::sinusoidal_rel_pos_encoding(x, d.time, nn::replace_dim(x, d.time, keys), keys,
                                               Dim::feature("pos", 4));
      },
      true, true);
  module(
      "causal_attention_bias",
      [](SweepNet& n, const Dims& d) {
        n.add("m",
              std::make_shared<nn::SelfAttention>(
                  nn::SelfAttentionOptions(d.feat, d.feat, d.feat, 2).qkv_bias(true).causal(true)));
      },
      [](SweepNet& n, const Dims& d, T x, OptDim) {
        return mod<nn::SelfAttention>(n, "m")->forward(x, d.time);
      },
      true, true);
  module(
      "cross_attention_fused_kv",
      [](SweepNet& n, const Dims& d) {
        n.add("m", std::make_shared<nn::CrossAttention>(
                       nn::CrossAttentionOptions(d.feat, d.feat, d.feat, d.feat, 2)
                           .fused_kv(true)
                           .qkv_bias(true)));
      },
      [](SweepNet& n, const Dims& d, T x, OptDim) {
        return mod<nn::CrossAttention>(n, "m")->forward(x, n.memory, d.mem_time);
      },
      false, true);
  module(
      "cross_attention",
      [](SweepNet& n, const Dims& d) {
        n.add("m", std::make_shared<nn::CrossAttention>(d.feat, d.feat, d.feat, d.feat, 2));
      },
      [](SweepNet& n, const Dims& d, T x, OptDim) {
        // Queries (the op's input) attend over a memory of its own time.
        return mod<nn::CrossAttention>(n, "m")->forward(x, n.memory, d.mem_time);
      },
      false, true);
  return v;
}

enum class Situation { kPlain, kBroadcast, kLoop, kState, kNoFeat, kStatic, kMask };

// The ops that take any dims (no feature dim needed): the `state` situation,
// and with pooling and the STFT over time the `nofeat` and `static` ones.
bool takes_any_dims(const std::string& op) {
  static const char* kOps[] = {"add",
                               "sub",
                               "mul",
                               "div",
                               "minimum",
                               "maximum",
                               "relu",
                               "tanh",
                               "sigmoid",
                               "gelu",
                               "swish",
                               "exp",
                               "abs",
                               "square",
                               "elu",
                               "silu",
                               "softplus",
                               "negative",
                               "dropout",
                               "scale_gradient",
                               "stop_gradient",
                               "compare_where",
                               "cast",
                               "train_flag_where",
                               "logical",
                               "softmax_time",
                               "reduce_mean_time",
                               "mask_padding",
                               "shift_right",
                               "range_in_axis"};
  for (const char* k : kOps) {
    if (op == k) return true;
  }
  return false;
}

void build(const Op& op, Situation s, Builder& b) {
  Dims d;
  if (s == Situation::kStatic) d.time = Dim::spatial("time", 5);
  Tensor x = s == Situation::kNoFeat || s == Situation::kStatic
                 ? b.extern_data("data", {Dim::batch(), d.time})
                 : b.extern_data("data", {Dim::batch(), d.time, d.feat});
  Tensor other = b.extern_data("other", {Dim::batch(), d.other});
  auto net = std::make_shared<SweepNet>();
  op.setup(*net, d);
  b.set_root(net);
  net->memory = b.extern_data("memory", {Dim::batch(), d.mem_time, d.feat});
  Tensor y;
  switch (s) {
    case Situation::kPlain:
      y = op.apply(b, *net, d, x, x, d.time);
      break;
    case Situation::kBroadcast:
      if (op.binary) {
        y = op.apply(b, *net, d, x, other, d.time);  // [B, T, feat] op [B, other]
      } else {
        y = op.apply(b, *net, d, x * other, x, d.time);  // on [B, T, feat, other]
      }
      break;
    case Situation::kLoop: {
      nn::Loop loop(b, d.time);
      Tensor state = loop.state(nn::constant(b, 0.5, {d.feat}), {Dim::batch(), d.feat});
      Tensor frame = loop.unstack(x) + state;
      Tensor value = op.apply(b, *net, d, frame, state, std::nullopt);
      loop.next(state, frame);
      loop.end();
      y = loop.stack(value);
      break;
    }
    case Situation::kState: {
      nn::Loop loop(b, d.mem_time);
      Tensor acc = loop.state(nn::constant(b, 0.0), {Dim::batch(), d.time});
      Tensor m = nn::reduce(loop.unstack(net->memory), "sum", {d.feat});  // [B]
      Tensor x_b = nn::reduce(x, "mean", {d.feat});                       // [B, time]
      Tensor frame = acc + nn::softmax(x_b * m, d.time);          // the weights of this frame
      Tensor value = op.apply(b, *net, d, acc + x_b, m, d.time);  // reads acc, not fed back
      loop.next(acc, frame);
      loop.end();
      y = loop.stack(value);
      break;
    }
    case Situation::kNoFeat:
    case Situation::kStatic:
      y = op.apply(b, *net, d, x, op.binary ? other : x, d.time);
      break;
    case Situation::kMask: {
      Tensor mask = b.extern_data("mask", {Dim::batch(), d.time}, ir::DType::kBool);
      y = op.apply(b, *net, d, nn::where(mask, x, nn::constant(b, 0.0)), x, d.time);
      x.mark_as_output("data");
      break;
    }
  }
  y.mark_as_output();
}

}  // namespace

std::vector<ModelDef> sweep_test_models() {
  std::vector<ModelDef> out;
  for (const Op& op : ops()) {
    for (auto [s, name] :
         {std::pair{Situation::kPlain, "plain"}, std::pair{Situation::kBroadcast, "broadcast"},
          std::pair{Situation::kLoop, "loop"}, std::pair{Situation::kState, "state"},
          std::pair{Situation::kNoFeat, "nofeat"}, std::pair{Situation::kStatic, "static"},
          std::pair{Situation::kMask, "mask"}}) {
      if (s == Situation::kLoop && op.needs_time) continue;
      if (s == Situation::kState && !takes_any_dims(op.name)) continue;
      bool over_time =
          std::string_view(op.name).starts_with("pool_") || std::string_view(op.name) == "stft";
      if ((s == Situation::kNoFeat || s == Situation::kStatic) &&
          !(takes_any_dims(op.name) || over_time)) {
        continue;
      }
      // Masking the padding needs a dynamic axis (on a static one: an error at the call).
      if (s == Situation::kStatic && op.name == std::string_view("mask_padding")) continue;
      if (s == Situation::kBroadcast && op.feature_only && !op.binary) continue;
      ModelDef def;
      def.name = absl::StrCat("sweep:", op.name, ":", name);
      def.description = "sweep model (issue 10)";
      def.build = [op, s](Builder& b) { build(op, s, b); };
      def.training = small_training();
      out.push_back(std::move(def));
    }
  }
  return out;
}

}  // namespace retc::testing
