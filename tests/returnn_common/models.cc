// retc's counterparts of returnn_common's model tests (tests/test_nn_*.py of
// rwth-i6/returnn_common): each model builds what the returnn_common test of
// the same name builds, written with retc's modules. The checks in RETURNN
// live in tests/returnn_common/test_nn_*.py, one file per returnn_common file;
// README.md there lists every returnn_common test and its counterpart.
//
// Model names: "rc-<file>-<test>", e.g. rc-base-simple-linear for
// test_nn_base.py's test_simple_linear.
#include "tests/returnn_common/models.h"

#include "compiler/nn/conformer.h"
#include "compiler/nn/loop.h"
#include "compiler/nn/modules.h"
#include "compiler/nn/parametrize.h"
#include "configs/bundled.h"

namespace retc::testing {
namespace {

using ir::Dim;
using ir::DType;
using nn::Builder;
using nn::Tensor;

/// returnn_common's dummy extern data: data [B, time, input_dim(13)].
struct Data {
  Dim time = Dim::spatial("time");
  Dim in;
  Tensor x;
  explicit Data(Builder& b, int64_t n = 13, const std::string& name = "input_dim")
      : in(Dim::feature(name, n)) {
    x = b.extern_data("data", {Dim::batch(), time, in});
  }
};

/// A root module for the tests that build their modules inline.
std::shared_ptr<nn::Module> module(const std::string& name = "net") {
  return std::make_shared<nn::Module>(name);
}

Tensor c(Builder& b, double v) { return nn::constant(b, v); }

/// returnn_common's `x.mark_as_loss(name)` of a dense value: RETURNN's "as_is" loss.
void as_is_loss(const Tensor& x, const std::string& name) { nn::custom_loss(x).mark_as_loss(name); }

// --- test_nn_array.py

void array_concat(Builder& b) {
  Data d(b, 3, "in");
  b.set_root(module());
  Tensor out = nn::concat(d.x, d.in, d.x * c(b, 2.0), d.in);
  out.mark_as_output();
  as_is_loss(out, "y");
}

// concat_features: the same concatenation along the feature dims, the second
// operand a different value.
void array_concat_features(Builder& b) {
  Data d(b, 3, "in");
  b.set_root(module());
  Tensor out = nn::concat(d.x, d.in, nn::tanh(d.x) * c(b, 2.0), d.in);
  out.mark_as_output();
  as_is_loss(out, "y");
}

// window (sizes 3 and 2) and window with stride (5/3 same, 5/3 valid, 2/2 valid).
void array_window(Builder& b) {
  Data d(b, 3, "in");
  b.set_root(module());
  nn::window(d.x, d.time, Dim::spatial("window3", 3)).mark_as_output("window3");
  nn::window(d.x, d.time, Dim::spatial("window2", 2)).mark_as_output("window2");
}

void array_window_stride(Builder& b) {
  Data d(b, 3, "in");
  b.set_root(module());
  nn::window(d.x, d.time, Dim::spatial("window5", 5), 3, "same").mark_as_output("same_5_3");
  nn::window(d.x, d.time, Dim::spatial("window5v", 5), 3, "valid").mark_as_output("valid_5_3");
  nn::window(d.x, d.time, Dim::spatial("window2v", 2), 2, "valid").mark_as_output("valid_2_2");
}

// window_via_get_network: a window reduced, added to a Linear's output; trained.
void array_window_train(Builder& b) {
  Data d(b, 3, "in");
  Dim out_dim = Dim::feature("out", 4);
  auto net = b.set_root(std::make_shared<nn::Linear>(d.in, out_dim));
  Dim win = Dim::spatial("window", 3);
  Tensor w = nn::window(d.x, d.time, win);
  Tensor y = net->forward(d.x) + nn::reduce(w, "mean", {win, d.in});
  y.mark_as_output();
  as_is_loss(nn::reduce(y, "mean", {out_dim}), "dummy");
}

// inverse_window: windows (sizes, strides and paddings of returnn_common's
// cases) averaged back into the frames, each case its own output.
void array_inverse_window(Builder& b) {
  Data d(b, 3, "in3");
  b.set_root(module());
  const std::tuple<int64_t, int64_t, const char*> cases[] = {
      {2, 2, "valid"}, {3, 2, "valid"}, {3, 1, "valid"}, {5, 2, "same"},
      {2, 2, "same"},  {2, 1, "same"},  {5, 3, "same"}};
  for (const auto& [w, stride, padding] : cases) {
    const std::string name = absl::StrCat("inv_", w, "_", stride, "_", padding);
    Dim win = Dim::spatial(absl::StrCat("window", w, "_", stride, "_", padding), w);
    Tensor windows = nn::window(d.x, d.time, win, stride, padding);
    Dim chunks = windows.dims()[ir::index_of(windows.dims(), win) - 1];  // the windows' axis
    nn::inverse_window(windows, chunks, win, d.x, d.time, stride, padding).mark_as_output(name);
  }
}

// --- test_nn_attention.py

void attention_self_attention(Builder& b) {
  Data d(b);
  auto net = module();
  auto att = net->register_module(
      "self_att", std::make_shared<nn::SelfAttention>(
                      nn::SelfAttentionOptions(d.in, Dim::feature("key-dim-total", 21),
                                               Dim::feature("value-dim-total", 33), 3)
                          .out_dim(Dim::feature("out", 5))));
  b.set_root(net);
  att->forward(d.x, d.time).mark_as_output();
}

void attention_rel_pos_self_attention(Builder& b) {
  Data d(b, 12, "in");
  auto net = module();
  auto att = net->register_module(
      "self_att", std::make_shared<nn::RelPosSelfAttention>(
                      nn::RelPosSelfAttentionOptions(d.in, Dim::feature("key-dim-total", 21),
                                                     Dim::feature("value-dim-total", 33), 3)
                          .out_dim(Dim::feature("out", 5))));
  b.set_root(net);
  att->forward(d.x, d.time).mark_as_output();
}

// Shaw et al. 2018 (learnable relative positions, clipping 3, no biases).
void attention_rel_pos_learnable(Builder& b) {
  Data d(b, 12, "in");
  auto net = module();
  auto att = net->register_module(
      "self_att", std::make_shared<nn::SelfAttention>(
                      nn::SelfAttentionOptions(d.in, Dim::feature("key-dim-total", 21),
                                               Dim::feature("value-dim-total", 33), 3)
                          .rel_pos_clipping(3)
                          .proj_bias(false)
                          .out_dim(Dim::feature("out", 5))));
  b.set_root(net);
  att->forward(d.x, d.time).mark_as_output();
}

// --- test_nn_base.py

void base_simple_linear(Builder& b) {
  Data d(b);
  auto lin = b.set_root(std::make_shared<nn::Linear>(d.in, Dim::feature("linear-out", 13)));
  lin->forward(d.x).mark_as_output();
}

void base_simple_linear_ex(Builder& b) {
  Data d(b, 3, "in");
  auto lin = b.set_root(std::make_shared<nn::Linear>(d.in, Dim::feature("out", 5)));
  lin->forward(d.x).mark_as_output();
}

class LinearNet : public nn::Module {
 public:
  LinearNet(Dim in, Dim out) : Module("linear_net") {
    linear = register_module("linear", std::make_shared<nn::Linear>(in, out));
  }
  Tensor forward(const Tensor& x,
                 std::source_location loc = std::source_location::current()) const {
    return call(x, loc, [&](const Tensor& h) { return linear->forward(h); });
  }
  std::shared_ptr<nn::Linear> linear;
};

void base_simple_net_linear(Builder& b) {
  Data d(b);
  auto net = b.set_root(std::make_shared<LinearNet>(d.in, Dim::feature("linear-out", 13)));
  net->forward(d.x).mark_as_output();
}

// square_matrix and share_params: linear2 [13, 13], applied once or twice.
template <int kTimes>
void base_square(Builder& b) {
  Data d(b);
  Dim out = Dim::feature("linear-out", 13);
  auto net = module();
  auto linear = net->register_module("linear", std::make_shared<nn::Linear>(d.in, out));
  auto linear2 = net->register_module("linear2", std::make_shared<nn::Linear>(out, out));
  b.set_root(net);
  Tensor x = linear->forward(d.x);
  for (int i = 0; i < kTimes; ++i) x = linear2->forward(x);
  x.mark_as_output();
}

void base_arithmetic(Builder& b) {
  Data d(b);
  b.set_root(module());
  (c(b, 1.0) / d.x + d.x * c(b, 2.0)).mark_as_output();
}

Tensor functional_example(const Tensor& x) {
  return nn::tanh((x + c(x.builder(), 1.0)) * c(x.builder(), 0.5));
}

void base_functional(Builder& b) {
  Data d(b);
  b.set_root(module());
  Tensor x = d.x - c(b, 1.0);
  x = functional_example(x);
  x = x + c(b, 1.0);
  functional_example(x).mark_as_output();
}

class DropoutLinear : public nn::Module {
 public:
  DropoutLinear(Dim in, Dim out, double dropout = 0.1) : Module("block"), dropout_(dropout) {
    linear = register_module("linear", std::make_shared<nn::Linear>(in, out));
  }
  Tensor forward(const Tensor& x,
                 std::source_location loc = std::source_location::current()) const {
    return call(x, loc, [&](const Tensor& h) { return linear->forward(nn::dropout(h, dropout_)); });
  }
  std::shared_ptr<nn::Linear> linear;

 private:
  double dropout_;
};

void base_explicit_root_ctx(Builder& b) {
  Data d(b);
  auto net = b.set_root(std::make_shared<DropoutLinear>(d.in, Dim::feature("linear-out", 13)));
  net->forward(d.x).mark_as_output();
}

void base_root_mod_call_twice(Builder& b) {
  Dim in = Dim::feature("input", 5), time = Dim::spatial("time");
  Tensor x1 = b.extern_data("input1", {Dim::batch(), time, in});
  Tensor x2 = b.extern_data("input2", {Dim::batch(), time, in});
  auto block = b.set_root(std::make_shared<DropoutLinear>(in, Dim::feature("linear-out", 13)));
  block->forward(x1).mark_as_output("y");
  block->forward(x2).mark_as_output("z");
}

/// A module returning two values (multiple_returns, from_call_variations).
class TwoOut : public nn::Module {
 public:
  TwoOut(Dim in, bool second_linear, bool return_inner)
      : Module("sub_net"), return_inner_(return_inner) {
    linear =
        register_module("linear", std::make_shared<nn::Linear>(in, Dim::feature("linear-out", 13)));
    if (second_linear) {
      linear2 = register_module("linear2", std::make_shared<nn::Linear>(
                                               linear->out_dim(), Dim::feature("linear-out", 13)));
    }
  }
  std::pair<Tensor, Tensor> forward(const Tensor& x) const {
    Tensor inner, out;
    call(x, std::source_location::current(), [&](const Tensor& h) {
      inner = linear->forward(h);
      out = linear2 ? linear2->forward(inner) : inner;
      return out;
    });
    return {out, return_inner_ ? inner : out};
  }
  Dim out_dim() const { return linear2 ? linear2->out_dim() : linear->out_dim(); }
  std::shared_ptr<nn::Linear> linear, linear2;

 private:
  bool return_inner_;
};

class Wrap : public nn::Module {
 public:
  explicit Wrap(Dim in) : Module("sub_net") {
    sub = register_module("sub", std::make_shared<TwoOut>(in, false, false));
  }
  std::pair<Tensor, Tensor> forward(const Tensor& x) const {
    std::pair<Tensor, Tensor> r;
    call(x, std::source_location::current(), [&](const Tensor& h) {
      r = sub->forward(h);
      return r.first;
    });
    return r;
  }
  std::shared_ptr<TwoOut> sub;
};

void base_multiple_returns_depth_1(Builder& b) {
  Data d(b);
  auto net = module();
  auto sub = net->register_module("sub", std::make_shared<TwoOut>(d.in, false, false));
  b.set_root(net);
  auto [out, add_out] = sub->forward(d.x);
  out.mark_as_output();
}

void base_multiple_returns_depth_2(Builder& b) {
  Data d(b);
  auto net = module();
  auto sub = net->register_module("sub", std::make_shared<Wrap>(d.in));
  b.set_root(net);
  auto [out, add_out] = sub->forward(d.x);
  out.mark_as_output();
}

void base_from_call_variations(Builder& b) {
  Data d(b);
  auto net = module();
  auto sub = net->register_module("sub", std::make_shared<TwoOut>(d.in, true, false));
  auto sub2 = net->register_module("sub2", std::make_shared<TwoOut>(sub->out_dim(), true, false));
  b.set_root(net);
  auto [out, add_out] = sub->forward(d.x);
  sub2->forward(add_out).first.mark_as_output();
}

// from_call_variations2: sub returns (out, inner); sub2 takes two inputs and
// reads only the first (returnn_common's _SubNet2 ignores y).
void base_from_call_variations2(Builder& b) {
  Data d(b);
  auto net = module();
  auto sub = net->register_module("sub", std::make_shared<TwoOut>(d.in, true, true));
  auto linear = net->register_module(
      "linear", std::make_shared<nn::Linear>(sub->out_dim(), Dim::feature("linear-out", 13)));
  auto sub2 =
      net->register_module("sub2", std::make_shared<TwoOut>(sub->linear->out_dim(), true, true));
  b.set_root(net);
  auto [out, add_out] = sub->forward(d.x);
  Tensor lin = linear->forward(out);
  lin.mark_as_output("lin");
  sub2->forward(add_out).first.mark_as_output();
}

// get_name_in_current_ctx: nested modules sub_1.same.child_1 and sub_2.child_2;
// RETURNN's variable names follow the nesting.
void base_name_in_ctx(Builder& b) {
  Data d(b);
  auto root = module("root");
  auto sub_1 = root->register_module("sub_1", module("sub_1"));
  auto same = sub_1->register_module("same", module("same"));
  auto child_1 = same->register_module("child_1", std::make_shared<nn::Linear>(d.in, d.in));
  auto sub_2 = root->register_module("sub_2", module("sub_2"));
  auto child_2 = sub_2->register_module("child_2", std::make_shared<nn::Linear>(d.in, d.in));
  b.set_root(root);
  child_2->forward(child_1->forward(d.x)).mark_as_output();
}

// deepcopy: three Linears, each a clone, in a Sequential.
void base_deepcopy(Builder& b) {
  Data d(b);
  auto seq = std::make_shared<nn::Sequential>();
  Dim in = d.in;
  for (int i = 0; i < 3; ++i) {
    Dim out = Dim::feature("linear" + std::to_string(i) + "-out", i + 3);
    seq->append(nn::clone(nn::make<nn::Linear>(in, out)));
    in = out;
  }
  b.set_root(seq);
  seq->forward(d.x).mark_as_output();
}

// deepcopy_same_linear(_diff_init): one Linear cloned three times.
void base_deepcopy_same_linear(Builder& b) {
  Data d(b);
  auto lin = nn::make<nn::Linear>(d.in, d.in);
  auto seq = std::make_shared<nn::Sequential>();
  for (int i = 0; i < 3; ++i) seq->append(nn::clone(lin));
  b.set_root(seq);
  seq->forward(d.x).mark_as_output();
}

class Sub : public nn::Module {
 public:
  explicit Sub(Dim in) : Module("sub") {
    lin = register_module("lin", std::make_shared<nn::Linear>(in, in));
  }
  Tensor forward(const Tensor& x,
                 std::source_location loc = std::source_location::current()) const {
    return call(x, loc, [&](const Tensor& h) { return lin->forward(h); });
  }
  std::shared_ptr<nn::Linear> lin;
};

void base_deepcopy_deep(Builder& b) {
  Data d(b);
  auto sub = nn::make<Sub>(d.in);
  sub->lin->weight().set_weight_decay(0.01);  // an option the clones keep
  auto seq = std::make_shared<nn::Sequential>();
  for (int i = 0; i < 3; ++i) seq->append(nn::clone(sub));
  b.set_root(seq);
  seq->forward(d.x).mark_as_output();
}

void base_variable(Builder& b) {
  Data d(b, 5, "feature");
  struct Net : nn::Module {
    explicit Net(Dim dim) : Module("net") {
      variable = register_parameter("variable", {dim}, ir::ParamKind::kWeight);
    }
    nn::Parameter variable;
  };
  auto net = b.set_root(std::make_shared<Net>(d.in));
  (d.x + b.param(net->variable)).mark_as_output();
}

void base_parameter_weight_decay(Builder& b) {
  Data d(b, 5, "feature");
  auto net = std::make_shared<nn::Linear>(d.in, Dim::feature("out", 4));
  net->weight().set_weight_decay(1.1, nn::WeightDecayMode::kCoupled);
  net->bias().set_weight_decay(1.1, nn::WeightDecayMode::kCoupled);
  b.set_root(net);
  net->forward(d.x).mark_as_output();
}

void base_const_array(Builder& b) {
  Data d(b);
  b.set_root(module());
  std::vector<double> values;
  for (int i = 0; i < 13; ++i) values.push_back(10.0 * i / 12);  // numpy.linspace(0, 10, 13)
  (d.x + nn::constant(b, values, d.in)).mark_as_output();
}

void base_specaugment(Builder& b) {
  Data d(b);
  b.set_root(module());
  nn::specaugment(d.x, d.time, d.in).mark_as_output();
}

void base_direct_construction(Builder& b) {
  Data d(b, 3, "in");
  auto net = b.set_root(std::make_shared<nn::Linear>(d.in, Dim::feature("out", 5)));
  Tensor out = net->forward(d.x);
  out.mark_as_output();
  as_is_loss(out, "dummy");
}

/// A module that calls a Linear another module owns (the params are shared).
class SharedLinearNet : public nn::Module {
 public:
  explicit SharedLinearNet(std::shared_ptr<nn::Linear> linear)
      : Module("linear_net"), linear_(std::move(linear)) {}
  Tensor forward(const Tensor& x,
                 std::source_location loc = std::source_location::current()) const {
    return call(x, loc, [&](const Tensor& h) { return linear_->forward(h); });
  }

 private:
  std::shared_ptr<nn::Linear> linear_;
};

// param_name_deep: sub2 calls sub's Linear (its params shared, one variable each).
void base_param_name_deep(Builder& b) {
  Data d(b);
  Dim out = Dim::feature("linear-out", 13);
  auto net = module();
  auto sub = net->register_module("sub", std::make_shared<LinearNet>(d.in, out));
  auto sub2 = net->register_module("sub2", std::make_shared<SharedLinearNet>(sub->linear));
  b.set_root(net);
  (sub->forward(d.x) + sub2->forward(d.x)).mark_as_output();
}

// mod_early_setattr: the Linear made before the module that holds it.
void base_mod_early_setattr(Builder& b) {
  Data d(b);
  auto linear = std::make_shared<nn::Linear>(d.in, Dim::feature("linear-out", 13));
  auto net = module();
  net->register_module("linear", linear);
  b.set_root(net);
  linear->forward(d.x).mark_as_output();
}

// make_layer_subnet_deep: a raw RETURNN subnetwork of 100 layers, each the sum
// of the two before it.
void base_make_layer_subnet_deep(Builder& b) {
  Data d(b);
  b.set_root(module());
  constexpr int kLayers = 100;
  std::string subnet = absl::StrCat(R"({"output": {"class": "copy", "from": "deep)", kLayers,
                                    R"("}, "deep0": {"class": "copy", "from": "data"},)",
                                    R"( "deep1": {"class": "copy", "from": "data"})");
  for (int i = 1; i < kLayers; ++i) {
    absl::StrAppend(&subnet, ", \"deep", i + 1,
                    "\": {\"class\": \"combine\", \"kind\": \"add\", \"from\": [\"deep", i,
                    "\", \"deep", i - 1, "\"]}");
  }
  absl::StrAppend(&subnet, "}");
  nn::raw_layer({d.x},
                {.layer = absl::StrCat(R"({"class": "subnetwork", "subnetwork": )", subnet, "}"),
                 .out_dims = d.x.dims()})
      .mark_as_output();
}

// --- test_nn_cond.py: returnn_common's predicate "the batch size is even" is
// here "the longest sequence is longer than 5 frames": data-dependent, either
// branch taken on random batches.

Tensor predicate(const Data& d, double threshold = 5.0) {
  Builder& b = d.x.builder();
  Tensor longest =
      nn::reduce(nn::cast(nn::length(d.x, d.time), DType::kFloat32), "max", {Dim::batch()});
  return nn::compare(longest, c(b, threshold), "greater");
}

void cond_cond(Builder& b) {
  Data d(b);
  Dim out = Dim::feature("linear-out", 13);
  auto net = module();
  auto lt = net->register_module("linear_true", std::make_shared<nn::Linear>(d.in, out));
  auto lf = net->register_module("linear_false", std::make_shared<nn::Linear>(d.in, out));
  b.set_root(net);
  nn::cond(
      predicate(d), [&] { return lt->forward(d.x); }, [&] { return lf->forward(d.x); })
      .mark_as_output();
}

void cond_shared_params(Builder& b) {
  Data d(b);
  auto net = module();
  auto linear = net->register_module(
      "linear", std::make_shared<nn::Linear>(d.in, Dim::feature("linear-out", 13)));
  b.set_root(net);
  nn::cond(
      predicate(d), [&] { return linear->forward(d.x); },
      [&] { return linear->forward(d.x * c(b, 2.0)); })
      .mark_as_output();
}

void cond_twice_shared_params(Builder& b) {
  Data d(b);
  Dim out = Dim::feature("linear-out", 13);
  auto net = module();
  auto pre = net->register_module("pre_linear", std::make_shared<nn::Linear>(d.in, out));
  auto lt = net->register_module("linear_true", std::make_shared<nn::Linear>(out, out));
  auto lf = net->register_module("linear_false", std::make_shared<nn::Linear>(out, out));
  b.set_root(net);
  Tensor x = pre->forward(d.x);
  x = nn::cond(
      predicate(d), [&] { return lt->forward(x); }, [&] { return lf->forward(x); });
  x = nn::cond(
      nn::logical_not(predicate(d)), [&] { return lt->forward(x); },
      [&] { return lf->forward(x); });
  x.mark_as_output();
}

void cond_random(Builder& b) {
  Data d(b);
  b.set_root(module());
  nn::cond(
      predicate(d), [&] { return d.x + nn::random_normal(b, d.x.dims(), 0.0, 1.0, {d.x}); },
      [&] { return d.x; })
      .mark_as_output();
}

// cond_new_axis: in one branch, the time axis renamed to a new dim and reduced.
void cond_new_axis(Builder& b) {
  Data d(b, 12, "in");
  auto net = b.set_root(std::make_shared<nn::Linear>(d.in, d.in));
  Dim new_dim = Dim::spatial("time:new-dim");
  nn::cond(
      predicate(d),
      [&] {
        return nn::reduce(net->forward(nn::replace_dim(net->forward(d.x), d.time, new_dim)), "max",
                          {new_dim});
      },
      [&] { return nn::reduce(d.x, "max", {d.time}); })
      .mark_as_output();
}

// cond_dim: a new dim of twice the lengths (returnn_common: the frames
// concatenated along time; here each frame twice, as RETURNN's TF concat
// does not concatenate per sequence), or (the other branch) uniform random
// numbers over that dim.
void cond_dim(Builder& b) {
  Data d(b, 12, "in");
  b.set_root(module());
  Dim doubled_dim = Dim::spatial("time*2");
  Tensor doubled = nn::repeat(d.x, d.time, 2, doubled_dim);
  nn::cond(
      predicate(d), [&] { return doubled; },
      [&] {
        return nn::random_uniform(b, {Dim::batch(), doubled_dim, d.in}, 0.0, 1.0, {doubled});
      })
      .mark_as_output();
}

// cond_multiple_outputs: the branches' pairs as one stacked value.
void cond_multiple_outputs(Builder& b) {
  Data d(b);
  b.set_root(module());
  Tensor y1 = d.x * c(b, 0.5), y2 = d.x * c(b, 0.7) - c(b, 0.2);
  Dim two = Dim::spatial("pair", 2);
  Tensor r = nn::cond(
      predicate(d),
      [&] {
        return nn::stack({y1, y2}, two);
      },
      [&] {
        return nn::stack({y2, y1}, two);
      });
  auto xs = nn::unstack(r, two);
  (xs[0] - xs[1]).mark_as_output();
}

// cond_chunking_conformer: the encoder (relative-positional self-attention)
// in both branches of a condition on the train flag, then a time-synchronous
// beam search over its frames.
void cond_chunking_conformer(Builder& b) {
  Data d(b, 10, "input");
  Dim labels = Dim::feature("labels", 5);
  Dim wb = labels + Dim::feature("blank", 1);
  auto net = module("model");
  auto self_att = net->register_module(
      "self_att", std::make_shared<nn::RelPosSelfAttention>(
                      nn::RelPosSelfAttentionOptions(d.in, Dim::feature("keys", 2), d.in, 1)));
  auto logits = net->register_module("out_label_logits", std::make_shared<nn::Linear>(d.in, wb));
  b.set_root(net);
  Tensor enc = nn::cond(
      nn::train_flag(b), [&] { return self_att->forward(d.x, d.time); },
      [&] { return self_att->forward(d.x, d.time); });
  enc.mark_as_output("enc");
  nn::Loop loop(b, d.time);
  Tensor frame = loop.unstack(enc);
  Tensor label = loop.choice(nn::log_softmax(logits->forward(frame), wb), wb);
  loop.end();
  loop.stack(label).mark_as_search_output();
}

// --- test_nn_conformer.py

void conformer_conformer(Builder& b) {
  Data d(b, 10, "input");
  auto conformer = b.set_root(
      std::make_shared<nn::ConformerEncoder>(d.in, Dim::feature("out", 14), Dim::feature("ff", 17),
                                             nn::ConformerOptions().num_layers(2).num_heads(2)));
  conformer->forward(d.x, d.time).mark_as_output();
}

// --- test_nn_const.py

void const_ones(Builder& b) {
  Data d(b, 5, "feat");
  b.set_root(module());
  nn::constant(b, 1.0, {d.in}).mark_as_output("ones");
  d.x.mark_as_output("data_copy");
}

// ones_like_new_spatial_dim: a loop over a new axis (5 frames), its stacked
// values plus ones of their type.
void const_ones_like_new_spatial_dim(Builder& b) {
  Data d(b);
  b.set_root(module());
  Dim steps = Dim::spatial("steps");
  Tensor mean = nn::reduce(d.x, "mean", {d.time});
  nn::Loop loop(b, steps);
  Tensor i = loop.state(c(b, 0.0), {Dim::batch()});
  Tensor i1 = i + c(b, 1.0);
  loop.next(i, i1);
  Tensor frame = i1 * mean;
  loop.end(nn::compare(i1, c(b, 5.0), "greater_equal"), 5);
  Tensor y = loop.stack(frame);
  (nn::constant(b, 1.0, y.dims(), {y}) + y).mark_as_output();
}

// --- test_nn_container.py

void container_module_list(Builder& b) {
  Data d(b);
  auto net = module();
  auto ls = net->register_module("ls", std::make_shared<nn::ModuleList>());
  Dim in = d.in;
  for (int i = 0; i < 4; ++i) {
    Dim out = Dim::feature("linear-out" + std::to_string(i), 3 + i);
    ls->append(std::make_shared<nn::Linear>(in, out));
    in = out;
  }
  b.set_root(net);
  Tensor x = d.x;
  for (size_t i = 0; i < ls->size(); ++i) x = ls->at<nn::Linear>(i)->forward(x);
  x.mark_as_output();
}

template <bool kNamed>
void container_sequential(Builder& b) {
  Data d(b);
  auto net = module();
  auto seq = net->register_module("seq", std::make_shared<nn::Sequential>());
  const char* names[] = {"one", "two", "three"};
  Dim in = d.in;
  for (int i = 0; i < 3; ++i) {
    Dim out =
        Dim::feature(absl::StrCat(kNamed ? "linear" : "feat", i + 1, kNamed ? "-out" : ""), i + 1);
    if (kNamed) {
      seq->append(names[i], std::make_shared<nn::Linear>(in, out));
    } else {
      seq->append(std::make_shared<nn::Linear>(in, out));
    }
    in = out;
  }
  b.set_root(net);
  seq->forward(d.x).mark_as_output();
}

void container_parameter_list(Builder& b) {
  Data d(b, 13, "input");
  auto net = module();
  auto list = net->register_module("param_list", std::make_shared<nn::ParameterList>());
  for (int i = 0; i < 3; ++i) list->append({d.in});
  b.set_root(net);
  Tensor x = d.x;
  for (size_t i = 0; i < list->size(); ++i) x = x + b.param(list->at(i));
  x.mark_as_output();
}

// --- test_nn_conv.py

template <bool kDepthwise>
void conv_conv1d(Builder& b) {
  Data d(b);
  auto o = nn::Conv1dOptions(d.in, Dim::feature("out", 13), 4).padding("valid");
  if (kDepthwise) {
    o.groups(13);
  } else {
    o.stride(3);
  }
  auto conv = b.set_root(std::make_shared<nn::Conv1d>(o));
  conv->forward(d.x, d.time).mark_as_output();
}

// --- test_nn_debug_eager_mode.py: eager = the torch target (checked there).

void eager_simple_linear(Builder& b) {
  Dim in = Dim::feature("in", 5);
  Tensor x = b.extern_data("data", {Dim::batch(), Dim::spatial("time"), in});
  auto lin = b.set_root(std::make_shared<nn::Linear>(in, Dim::feature("lin", 10)));
  lin->forward(x).mark_as_output();
}

void eager_conformer(Builder& b) {
  Data d(b, 5, "in");
  auto conformer = b.set_root(std::make_shared<nn::ConformerEncoder>(
      d.in, Dim::feature("conformer", 10), Dim::feature("ff", 40),
      nn::ConformerOptions().num_layers(2).num_heads(2)));
  conformer->forward(d.x, d.time).mark_as_output();
}

void eager_constant(Builder& b) {
  Data d(b, 5, "in");
  b.set_root(module());
  nn::constant(b, 42.0, {Dim::spatial("custom-batch", 3)}).mark_as_output("const");
  d.x.mark_as_output();
}

// --- test_nn_encoder.py: BlstmCnnSpecAugEncoder: SpecAugment, two 3x3 convs
// with max pooling over the features, two BLSTM layers.

class BlstmCnnSpecAug : public nn::Module {
 public:
  BlstmCnnSpecAug(Dim in, Dim out, int layers)
      : Module("blstm_cnn_specaug"),
        in_(in),
        pooled0_(Dim::spatial("feat_pool0", (*in.size() + 1) / 2)),
        pooled1_(Dim::spatial("feat_pool1", (*pooled0_.size() + 1) / 2)),
        merged_(Dim::feature("conv_out", *pooled1_.size() * 32)),
        out_dim_(in) {
    conv0 = register_module("conv0", std::make_shared<nn::Conv2d>(nn::Conv2dOptions(
                                         chan_, Dim::feature("conv0", 32), {3, 3})));
    conv1 = register_module("conv1", std::make_shared<nn::Conv2d>(nn::Conv2dOptions(
                                         conv0->out_dim(), Dim::feature("conv1", 32), {3, 3})));
    layers_ = register_module("layers", std::make_shared<nn::ModuleList>());
    Dim d = merged_;
    for (int i = 0; i < layers; ++i) {
      auto l = layers_->append(std::make_shared<nn::BLstm>(d, out, out));
      d = l->out_dim();
    }
    out_dim_ = d;
  }
  Tensor forward(const Tensor& x, const Dim& time) const {
    return call(x, std::source_location::current(), [&](const Tensor& h0) {
      Tensor h = nn::specaugment(h0, time, in_);
      Dim feat = Dim::spatial("feat", *in_.size());
      h = nn::split_dims(h, in_, {feat, chan_});
      h = nn::pool(conv0->forward(h, time, feat), "max", {feat}, {2}, {}, "same", {pooled0_});
      h = nn::pool(conv1->forward(h, time, pooled0_), "max", {pooled0_}, {2}, {}, "same",
                   {pooled1_});
      h = nn::merge_dims(h, {pooled1_, conv1->out_dim()}, merged_);
      for (size_t i = 0; i < layers_->size(); ++i) h = layers_->at<nn::BLstm>(i)->forward(h, time);
      return h;
    });
  }
  std::shared_ptr<nn::Conv2d> conv0, conv1;

 private:
  Dim in_, pooled0_, pooled1_, merged_, out_dim_, chan_ = Dim::feature("chan", 1);
  std::shared_ptr<nn::ModuleList> layers_;
};

void encoder_blstm_cnn_specaug(Builder& b) {
  Data d(b, 10, "input");
  auto net = b.set_root(std::make_shared<BlstmCnnSpecAug>(d.in, Dim::feature("out", 14), 2));
  net->forward(d.x, d.time).mark_as_output();
}

// --- test_nn_generated_layers.py

void generated_merge_dims(Builder& b) {
  Dim time = Dim::spatial("time"), extra = Dim::spatial("extra-spatial", 10),
      feat = Dim::feature("feat", 3);
  Tensor x = b.extern_data("data", {Dim::batch(), time, feat, extra});
  b.set_root(module());
  nn::merge_dims(x, {extra, feat}, Dim::feature("out", 30)).mark_as_output();
}

void generated_repeat_int(Builder& b) {
  Dim time = Dim::spatial("time"), in = Dim::feature("in", 3);
  Tensor x = b.extern_data("data", {Dim::batch(), time, in});
  b.set_root(module());
  nn::repeat(x, time, 5, Dim::spatial("repeated")).mark_as_output();
}

void generated_repeat_layer(Builder& b) {
  Data d(b, 3, "F");
  b.set_root(module());
  Tensor reps = nn::cast(nn::constant(b, 5.0, {Dim::batch(), d.time}, {d.x}), DType::kInt32);
  nn::repeat(d.x, d.time, reps, Dim::spatial("repeated")).mark_as_output();
}

// repeat_without_out_dim(_same_as_input): a Linear's output repeated (2 or 1
// times) is the output, trained on the Linear's output as the loss.
template <int kReps>
void generated_repeat_train(Builder& b) {
  Data d(b, 3, "in");
  auto net = b.set_root(std::make_shared<nn::Linear>(d.in, Dim::feature("out", 5)));
  Tensor y = net->forward(d.x);
  nn::repeat(y, d.time, kReps, Dim::spatial("repeated")).mark_as_output();
  as_is_loss(y, "y");
}

void generated_repeat_as_loss(Builder& b) {
  Data d(b, 3, "in");
  b.set_root(module());
  Tensor out = nn::repeat(d.x, d.time, 1, Dim::spatial("repeated"));
  out.mark_as_output();
  as_is_loss(out, "y");
}

// --- test_nn_loop.py

void loop_rec_ff(Builder& b) {
  Data d(b);
  Dim out = Dim::feature("linear-out", 13);
  auto net = module();
  auto lin = net->register_module("rec_linear", std::make_shared<nn::Linear>(d.in + out, out));
  b.set_root(net);
  nn::Loop loop(b, d.time);
  Tensor x = loop.unstack(d.x);
  Tensor h = loop.state(c(b, 0.0), {Dim::batch(), out});
  Tensor h1 = lin->forward(nn::concat(x, d.in, h, out));
  loop.next(h, h1);
  loop.end();
  loop.stack(h1).mark_as_output();
}

// lstm_default_name: an LSTM without a name of the user's (a ModuleList's
// "0"); its type names it "lstm" in messages: `kWrongInput` feeds it data of
// another dim, an error at build time that says `lstm '0'`.
template <bool kWrongInput>
void loop_lstm_default_name(Builder& b) {
  Data d(b, 2, "in");
  auto net = module();
  auto list = net->register_module("list", std::make_shared<nn::ModuleList>());
  auto lstm = list->append(std::make_shared<nn::Lstm>(kWrongInput ? Dim::feature("other", 2) : d.in,
                                                      Dim::feature("out", 3)));
  b.set_root(net);
  lstm->forward(d.x, d.time).mark_as_output();
}

void loop_rec_inner_lstm(Builder& b) {
  Data d(b);
  Dim out = Dim::feature("out", 13);
  auto net = module();
  auto lstm = net->register_module("lstm", std::make_shared<nn::Lstm>(d.in, out));
  b.set_root(net);
  nn::Loop loop(b, d.time);
  Tensor x = loop.unstack(d.x);
  Tensor h = loop.state(c(b, 0.0), {Dim::batch(), out});
  Tensor cs = loop.state(c(b, 0.0), {Dim::batch(), out});
  nn::LstmState s = lstm->step(x, {h, cs});
  loop.next(h, s.h);
  loop.next(cs, s.c);
  loop.end();
  loop.stack(s.h).mark_as_output();
}

void loop_rec_simple_iter(Builder& b) {
  Data d(b);
  b.set_root(module());
  Tensor mean = nn::reduce(d.x, "mean", {d.time});
  nn::Loop loop(b, Dim::spatial("iter"));
  Tensor i = loop.state(c(b, 0.0), {Dim::batch()});
  Tensor i1 = i + c(b, 1.0);
  loop.next(i, i1);
  Tensor frame = i1 * mean;
  loop.end(nn::compare(i1, c(b, 5.0), "greater_equal"), 10);
  loop.stack(frame).mark_as_output();
}

void loop_rec_hidden(Builder& b) {
  Data d(b);
  Dim out = Dim::feature("lstm-out", 13);
  auto net = module();
  auto lstm = net->register_module("lstm", std::make_shared<nn::Lstm>(d.in, out));
  b.set_root(net);
  auto [y, state] = lstm->forward_with_state(d.x, d.time);
  // concat with broadcasting: the final state over every frame.
  Tensor zeros = nn::constant(b, 0.0, {Dim::batch(), d.time, out}, {d.x});
  Dim h_dim = Dim::feature("h", 13), c_dim = Dim::feature("c", 13);
  Tensor h = nn::replace_dim(zeros + state.h, out, h_dim),
         cs = nn::replace_dim(zeros + state.c, out, c_dim);
  Tensor yh = nn::concat(y, out, h, h_dim);
  nn::concat(yh, out + h_dim, cs, c_dim).mark_as_output();
}

void loop_rec_hidden_initial(Builder& b) {
  Data d(b);
  Dim out = Dim::feature("out", 13);
  auto net = module();
  auto linear = net->register_module("linear", std::make_shared<nn::Linear>(d.in, out));
  auto lstm = net->register_module("lstm", std::make_shared<nn::Lstm>(out, out));
  b.set_root(net);
  Tensor y = linear->forward(d.x);
  nn::LstmState state;
  for (int i = 0; i < 3; ++i) std::tie(y, state) = lstm->forward_with_state(y, d.time, state);
  y.mark_as_output();
}

void loop_axis_indices(Builder& b) {
  Data d(b);
  b.set_root(module());
  Tensor indices = nn::range_in_axis(d.x, d.time);
  nn::Loop loop(b, d.time);
  Tensor i = loop.unstack(indices);
  Tensor s = loop.state(nn::cast(nn::constant(b, 0.0, {Dim::batch(), d.in}, {d.x}), DType::kInt32));
  Tensor s1 = s + i;
  loop.next(s, s1);
  loop.end();
  loop.stack(s1).mark_as_output("sums");
  loop.stack(i).mark_as_output("indices");
}

void loop_ctc_search(Builder& b) {
  Data d(b, 5, "feat");
  Dim classes = Dim::feature("classes", 3);
  auto net = module("model");
  auto encoder =
      net->register_module("encoder", std::make_shared<nn::Linear>(d.in, Dim::feature("enc", 10)));
  auto projection =
      net->register_module("projection", std::make_shared<nn::Linear>(encoder->out_dim(), classes));
  b.set_root(net);
  Tensor enc = encoder->forward(d.x);
  enc.mark_as_output("enc");
  nn::Loop loop(b, d.time);
  Tensor frame = loop.unstack(enc);
  Tensor label = loop.choice(nn::log_softmax(projection->forward(frame), classes), classes);
  loop.end();
  loop.stack(label).mark_as_search_output();
}

// --- test_nn_loss.py

struct CeModel {
  Dim time = Dim::spatial("time"), in = Dim::feature("input", 3), out = Dim::feature("out", 5);
  Tensor loss;
  explicit CeModel(Builder& b) {
    Tensor x = b.extern_data("data", {Dim::batch(), time, in});
    Tensor y = b.extern_data("classes", {Dim::batch(), time}, DType::kInt32, out);
    auto linear = b.set_root(std::make_shared<nn::Linear>(in, out));
    loss = nn::softmax_cross_entropy(linear->forward(x), y);
  }
};

void loss_cross_entropy(Builder& b) {
  CeModel m(b);
  m.loss.mark_as_output();
}

void loss_mark_as_loss(Builder& b) {
  CeModel m(b);
  m.loss.mark_as_loss("ce");
}

void functional_mark_as_loss(const Tensor& x) {
  Tensor y = nn::minimum(x * c(x.builder(), 2.0), c(x.builder(), 10.0));
  nn::custom_loss(y).mark_as_loss("x");
}

void loss_mark_as_loss_in_subnet(Builder& b) {
  CeModel m(b);
  functional_mark_as_loss(m.loss);
}

// --- test_nn_masked_computation.py: retc's masked state update (nn::where).

void masked_computation_lstm(Builder& b) {
  Data d(b);
  Dim out = Dim::feature("out", 13);
  auto net = module();
  auto lstm = net->register_module("lstm", std::make_shared<nn::Lstm>(d.in, out));
  b.set_root(net);
  nn::Loop loop(b, d.time);
  Tensor x = loop.unstack(d.x);
  Tensor h = loop.state(c(b, 0.0), {Dim::batch(), out});
  Tensor cs = loop.state(c(b, 0.0), {Dim::batch(), out});
  Tensor mask = nn::compare(nn::reduce(x, "mean", {d.in}), c(b, 0.0), "greater_equal");
  nn::LstmState s = lstm->step(x, {h, cs});
  Tensor h1 = nn::where(mask, s.h, h), c1 = nn::where(mask, s.c, cs);
  loop.next(h, h1);
  loop.next(cs, c1);
  Tensor mask_f = nn::cast(mask, DType::kFloat32);
  loop.end();
  loop.stack(h1).mark_as_output();
  loop.stack(mask_f).mark_as_output("mask");
}

// --- test_nn_math.py

void math_op_broadcasting(Builder& b) {
  Tensor x = b.extern_data("x", {Dim::batch(), Dim::feature("x", 3)});
  Tensor y = b.extern_data("y", {Dim::batch(), Dim::feature("y", 5)});
  b.set_root(module());
  (x + y).mark_as_output();
}

void math_split_glu(Builder& b) {
  Data d(b, 6, "feature");
  b.set_root(module());
  Dim half_a = Dim::feature("feature//2", 3), half_b = Dim::feature("feature//2_b", 3);
  auto ab = nn::split(d.x, d.in, {half_a, half_b});
  (ab[0] * nn::replace_dim(nn::sigmoid(ab[1]), half_b, half_a)).mark_as_output();
}

void math_cumsum(Builder& b) {
  Data d(b);
  b.set_root(module());
  nn::cumsum(d.x, d.time).mark_as_output();
}

void math_logical_and(Builder& b) {
  Tensor x = b.extern_data("x", {Dim::batch(), Dim::feature("x", 3)}, DType::kBool);
  b.set_root(module());
  Tensor t = nn::compare(c(b, 1.0), c(b, 0.0), "greater");  // True
  nn::logical_and(t, x).mark_as_output();
}

// --- test_nn_normalization.py

void normalization_batch_norm(Builder& b) {
  Data d(b);
  auto net = module();
  auto bn = net->register_module("bn", std::make_shared<nn::BatchNorm>(d.in));
  b.set_root(net);
  bn->forward(d.x).mark_as_output();
}

// --- test_nn_rand.py

void rand_random_normal(Builder& b) {
  Data d(b);
  b.set_root(module());
  (d.x + nn::random_normal(b, d.x.dims(), 0.0, 1.0, {d.x})).mark_as_output();
}

void rand_multi_call(Builder& b) {
  Data d(b);
  b.set_root(module());
  (d.x + nn::random_normal(b, d.x.dims(), 0.0, 1.0, {d.x}) -
   nn::random_normal(b, d.x.dims(), 0.0, 1.0, {d.x}))
      .mark_as_output();
}

void rand_in_loop(Builder& b) {
  Data d(b, 3, "input");
  b.set_root(module());
  nn::Loop loop(b, d.time);
  Tensor x = loop.unstack(d.x);
  Tensor r = nn::random_normal(b, {Dim::batch(), d.in}, 0.0, 1.0, {x});
  Tensor frame = x * c(b, 0.0) + r;
  loop.end();
  loop.stack(frame).mark_as_output();
}

// random_normal_shape_get_network: data [B, in] without a time axis.
void rand_no_time(Builder& b) {
  Dim in = Dim::feature("in", 3);
  Tensor x = b.extern_data("data", {Dim::batch(), in});
  b.set_root(module());
  Tensor out = x + nn::random_normal(b, x.dims(), 0.0, 1.0, {x});
  out.mark_as_output();
  as_is_loss(out, "dummy");
}

template <bool kLinear>
void rand_with_time(Builder& b) {
  Data d(b, 3, "in");
  Tensor noisy = d.x + nn::random_normal(b, d.x.dims(), 0.0, 1.0, {d.x});
  Tensor out = noisy;
  if (kLinear) {
    auto net = b.set_root(std::make_shared<nn::Linear>(d.in, d.in));
    out = net->forward(noisy) + d.x;
  } else {
    b.set_root(module());
  }
  out.mark_as_output();
  as_is_loss(out, "dummy");
}

// --- test_nn_rec.py

void rec_simple_net_lstm(Builder& b) {
  Data d(b);
  auto net = module();
  auto lstm =
      net->register_module("lstm", std::make_shared<nn::Lstm>(d.in, Dim::feature("lstm-out", 13)));
  b.set_root(net);
  lstm->forward(d.x, d.time).mark_as_output();
}

void rec_simple_net_zoneout_lstm(Builder& b) {
  Data d(b);
  auto net = module();
  auto lstm = net->register_module(
      "lstm", std::make_shared<nn::ZoneoutLstm>(d.in, Dim::feature("lstm-out", 13)));
  b.set_root(net);
  lstm->forward(d.x, d.time).mark_as_output();
}

// --- test_nn_transformer.py: encoder-decoder Transformer (2 + 2 layers, model
// dim 10, ff 40, 2 heads) decoding with beam search, as many labels as input frames.

class Seq2SeqTransformer : public nn::Module {
 public:
  Seq2SeqTransformer(Dim model, Dim target) : Module("transformer"), target_(target) {
    nn::TransformerOptions opts(model, Dim::feature("ff", 4 * *model.size()), 2);
    opts.num_layers(2);
    encoder = register_module("encoder", std::make_shared<nn::TransformerEncoder>(opts));
    decoder = register_module("decoder", std::make_shared<nn::TransformerDecoder>(opts));
    target_embed = register_module("target_embed", std::make_shared<nn::Embedding>(target, model));
    output_projection =
        register_module("output_projection", std::make_shared<nn::Linear>(model, target));
  }
  Tensor search(const Tensor& x, const Dim& time) const {
    return call(x, std::source_location::current(), [&](const Tensor& h) {
      Builder& b = h.builder();
      Tensor memory = encoder->forward(h, time);
      memory.mark_as_output("encoder");
      const Dim& model = memory.dims().back();
      nn::Loop loop(b, Dim::spatial("out_time"));
      configs::EndAtSourceLength end(loop, memory, time);
      Tensor prev = loop.state(c(b, 0.0), {Dim::batch(), model});
      Tensor dec = decoder->step(loop.add_positional_encoding(prev), loop, memory, time);
      Tensor label =
          loop.choice(nn::log_softmax(output_projection->forward(dec), target_), target_);
      loop.next(prev, target_embed->forward(label));
      end.end();
      return loop.stack(label);
    });
  }
  std::shared_ptr<nn::TransformerEncoder> encoder;
  std::shared_ptr<nn::TransformerDecoder> decoder;
  std::shared_ptr<nn::Embedding> target_embed;
  std::shared_ptr<nn::Linear> output_projection;

 private:
  Dim target_;
};

void transformer_search(Builder& b) {
  Data d(b, 10, "input");
  auto net = b.set_root(std::make_shared<Seq2SeqTransformer>(d.in, Dim::feature("target", 7)));
  net->search(d.x, d.time).mark_as_search_output();
}

// --- test_nn_utils.py

// prev_target_seq: BOS (0) before the labels, one frame longer.
void utils_prev_target_seq(Builder& b) {
  Dim time = Dim::spatial("time"), in = Dim::feature("in", 3);
  Tensor x = b.extern_data("data", {Dim::batch(), time}, DType::kInt32, in);
  b.set_root(module());
  nn::pad(x, time, 1, 0, 0.0).mark_as_output();
}

void utils_register_call_post_hook(Builder& b) {
  Data d(b, 3, "in");
  auto net = std::make_shared<nn::Linear>(d.in, Dim::feature("out", 5));
  net->register_forward_hook(
      [](const nn::Module&, const Tensor&, const Tensor& y) { return y * c(y.builder(), 2.0); });
  b.set_root(net);
  net->forward(d.x).mark_as_output();
}

template <int kKind>
void utils_reparametrized(Builder& b) {
  Data d(b, 3, "in");
  auto net = std::make_shared<nn::Linear>(d.in, Dim::feature("out", 5));
  if (kKind == 0) nn::weight_norm(*net, "weight", {d.in});
  if (kKind == 1) nn::weight_noise(*net, "weight", 0.075);
  if (kKind == 2) nn::weight_dropout(*net, "weight", 0.3);
  b.set_root(net);
  net->forward(d.x).mark_as_output();
}

// random_frame_drop: each frame dropped with probability 0.1 in training.
void utils_random_frame_drop(Builder& b) {
  Data d(b, 3, "in");
  b.set_root(module());
  Tensor u = nn::random_uniform(b, {Dim::batch(), d.time}, 0.0, 1.0, {d.x});
  Tensor keep = nn::compare(u, c(b, 0.1), "greater_equal");
  Tensor mask = nn::where(nn::train_flag(b), keep, nn::compare(u, c(b, -1.0), "greater"));
  nn::masked_select(d.x, mask, d.time, Dim::spatial("kept")).mark_as_output();
}

ModelDef rc(std::string name, std::function<void(Builder&)> build) {
  ModelDef m;
  m.name = "rc-" + name;
  m.description = "returnn_common test counterpart (tests/returnn_common)";
  m.build = std::move(build);
  m.training = small_training();
  return m;
}

}  // namespace

std::vector<ModelDef> returnn_common_models() {
  return {
      rc("array-concat", array_concat),
      rc("array-concat-features", array_concat_features),
      rc("array-window", array_window),
      rc("array-window-stride", array_window_stride),
      rc("array-window-train", array_window_train),
      rc("array-inverse-window", array_inverse_window),
      rc("attention-self-attention", attention_self_attention),
      rc("attention-rel-pos-self-attention", attention_rel_pos_self_attention),
      rc("attention-rel-pos-learnable", attention_rel_pos_learnable),
      rc("base-simple-linear", base_simple_linear),
      rc("base-simple-linear-ex", base_simple_linear_ex),
      rc("base-simple-net-linear", base_simple_net_linear),
      rc("base-square-matrix", base_square<1>),
      rc("base-share-params", base_square<2>),
      rc("base-arithmetic", base_arithmetic),
      rc("base-functional", base_functional),
      rc("base-explicit-root-ctx", base_explicit_root_ctx),
      rc("base-root-mod-call-twice", base_root_mod_call_twice),
      rc("base-multiple-returns-depth-1", base_multiple_returns_depth_1),
      rc("base-multiple-returns-depth-2", base_multiple_returns_depth_2),
      rc("base-from-call-variations", base_from_call_variations),
      rc("base-from-call-variations2", base_from_call_variations2),
      rc("base-name-in-ctx", base_name_in_ctx),
      rc("base-deepcopy", base_deepcopy),
      rc("base-deepcopy-same-linear", base_deepcopy_same_linear),
      rc("base-deepcopy-deep", base_deepcopy_deep),
      rc("base-variable", base_variable),
      rc("base-parameter-weight-decay", base_parameter_weight_decay),
      rc("base-const-array", base_const_array),
      rc("base-specaugment", base_specaugment),
      rc("base-direct-construction", base_direct_construction),
      rc("base-param-name-deep", base_param_name_deep),
      rc("base-mod-early-setattr", base_mod_early_setattr),
      rc("base-make-layer-subnet-deep", base_make_layer_subnet_deep),
      rc("cond-cond", cond_cond),
      rc("cond-shared-params", cond_shared_params),
      rc("cond-twice-shared-params", cond_twice_shared_params),
      rc("cond-random", cond_random),
      rc("cond-new-axis", cond_new_axis),
      rc("cond-dim", cond_dim),
      rc("cond-multiple-outputs", cond_multiple_outputs),
      rc("cond-chunking-conformer", cond_chunking_conformer),
      rc("conformer-conformer", conformer_conformer),
      rc("const-ones", const_ones),
      rc("const-ones-like-new-spatial-dim", const_ones_like_new_spatial_dim),
      rc("container-module-list", container_module_list),
      rc("container-sequential", container_sequential<false>),
      rc("container-sequential-named", container_sequential<true>),
      rc("container-parameter-list", container_parameter_list),
      rc("conv-conv1d", conv_conv1d<false>),
      rc("conv-conv1d-depthwise", conv_conv1d<true>),
      rc("eager-simple-linear", eager_simple_linear),
      rc("eager-conformer", eager_conformer),
      rc("eager-constant", eager_constant),
      rc("encoder-blstm-cnn-specaug", encoder_blstm_cnn_specaug),
      rc("generated-merge-dims", generated_merge_dims),
      rc("generated-repeat-int", generated_repeat_int),
      rc("generated-repeat-layer", generated_repeat_layer),
      rc("generated-repeat-train-2", generated_repeat_train<2>),
      rc("generated-repeat-train-1", generated_repeat_train<1>),
      rc("generated-repeat-as-loss", generated_repeat_as_loss),
      rc("loop-rec-ff", loop_rec_ff),
      rc("loop-lstm-default-name", loop_lstm_default_name<false>),
      rc("loop-lstm-default-name-wrong-input", loop_lstm_default_name<true>),
      rc("loop-rec-inner-lstm", loop_rec_inner_lstm),
      rc("loop-rec-simple-iter", loop_rec_simple_iter),
      rc("loop-rec-hidden", loop_rec_hidden),
      rc("loop-rec-hidden-initial", loop_rec_hidden_initial),
      rc("loop-axis-indices", loop_axis_indices),
      rc("loop-ctc-search", loop_ctc_search),
      rc("loss-cross-entropy", loss_cross_entropy),
      rc("loss-mark-as-loss", loss_mark_as_loss),
      rc("loss-mark-as-loss-in-subnet", loss_mark_as_loss_in_subnet),
      rc("masked-computation-lstm", masked_computation_lstm),
      rc("math-op-broadcasting", math_op_broadcasting),
      rc("math-split-glu", math_split_glu),
      rc("math-cumsum", math_cumsum),
      rc("math-logical-and", math_logical_and),
      rc("normalization-batch-norm", normalization_batch_norm),
      rc("rand-random-normal", rand_random_normal),
      rc("rand-multi-call", rand_multi_call),
      rc("rand-in-loop", rand_in_loop),
      rc("rand-no-time", rand_no_time),
      rc("rand-with-time", rand_with_time<false>),
      rc("rand-train-epoch", rand_with_time<true>),
      rc("rec-simple-net-lstm", rec_simple_net_lstm),
      rc("rec-simple-net-zoneout-lstm", rec_simple_net_zoneout_lstm),
      rc("transformer-search", transformer_search),
      rc("utils-prev-target-seq", utils_prev_target_seq),
      rc("utils-register-call-post-hook", utils_register_call_post_hook),
      rc("utils-weight-norm", utils_reparametrized<0>),
      rc("utils-variational-weight-noise", utils_reparametrized<1>),
      rc("utils-weight-dropout", utils_reparametrized<2>),
      rc("utils-random-frame-drop", utils_random_frame_drop),
  };
}

}  // namespace retc::testing
