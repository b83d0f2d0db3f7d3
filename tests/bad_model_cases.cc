// Bad models, one mistake each. The mistake's line is marked with a
// `MISTAKE: <name>` comment; the expected message is the model's
// description. tests/integration/bad_models.sh compiles each with the CLI
// (non-zero exit, the message at file:line, no output file), and
// nn_test.cc checks the same through the API.
#include <cmath>

#include "compiler/nn/audio.h"
#include "compiler/nn/conformer.h"
#include "compiler/nn/loop.h"
#include "compiler/nn/modules.h"
#include "compiler/nn/parametrize.h"
#include "compiler/nn/transducer.h"
#include "tests/test_models.h"

namespace retc::testing {
namespace {

using ir::Dim;
using nn::Builder;
using nn::Tensor;

struct Setup {
  Dim time = Dim::spatial("time");
  Dim in = Dim::feature("input", 4);
  Dim out = Dim::feature("out", 3);
  Tensor x, y;
  explicit Setup(Builder& b) {
    x = b.extern_data("data", {Dim::batch(), time, in});
    y = b.extern_data("classes", {Dim::batch(), time}, ir::DType::kInt32, out);
  }
};

class Pair : public nn::Module {
 public:
  Pair(Dim in, Dim out) : Module("pair") {
    a = register_module("a", std::make_shared<nn::Linear>(in, out));
    b = register_module("b", std::make_shared<nn::Linear>(in, out));
  }
  std::shared_ptr<nn::Linear> a, b;
};

struct Case {
  const char* name;
  const char* expected;
  void (*build)(Builder&);
};

// Each mistake stays on the line with its marker:
// clang-format off
const Case kCases[] = {
    {"bad:linear-dim", "input dim 'hidden'(8) does not match in_dim 'input'(4)",
     [](Builder& b) {
       Setup s(b);
       auto lin = b.set_root(std::make_shared<nn::Linear>(s.in, s.out));
       Tensor h = b.extern_data("hidden", {Dim::batch(), s.time, Dim::feature("hidden", 8)});
       lin->forward(h).mark_as_output();  // MISTAKE: bad:linear-dim
     }},
    {"bad:duplicate-output", "output name 'output' is already used",
     [](Builder& b) {
       Setup s(b);
       auto lin = b.set_root(std::make_shared<nn::Linear>(s.in, s.out));
       Tensor y = lin->forward(s.x);
       y.mark_as_output();
       nn::tanh(y).mark_as_output();  // MISTAKE: bad:duplicate-output
     }},
    {"bad:duplicate-module", "module 'a' is registered twice",
     [](Builder& b) {
       Setup s(b);
       auto m = std::make_shared<Pair>(s.in, s.out);
       m->register_module("a", std::make_shared<nn::Linear>(s.in, s.out));  // MISTAKE: bad:duplicate-module
     }},
    {"bad:register-after-root", "module 'extra' is registered after the model was handed to set_root",
     [](Builder& b) {
       Setup s(b);
       auto m = b.set_root(std::make_shared<Pair>(s.in, s.out));
       m->register_module("extra", std::make_shared<nn::Linear>(s.in, s.out));  // MISTAKE: bad:register-after-root
       m->a->forward(s.x).mark_as_output();
     }},
    {"bad:sequential-needs-time", "module 'lstm' needs the time dim; call forward(x, time)",
     [](Builder& b) {
       Setup s(b);
       auto seq = std::make_shared<nn::Sequential>();
       seq->append("lstm", std::make_shared<nn::Lstm>(s.in, s.out));
       b.set_root(seq);
       seq->forward(s.x).mark_as_output();  // MISTAKE: bad:sequential-needs-time
     }},
    {"bad:duplicate-param", "parameter 'w' is registered twice",
     [](Builder& b) {
       Setup s(b);
       nn::Module m("m");
       m.register_parameter("w", {s.in}, ir::ParamKind::kWeight);
       m.register_parameter("w", {s.in}, ir::ParamKind::kWeight);  // MISTAKE: bad:duplicate-param
     }},
    {"bad:module-name", "module name 'enc/ff' is invalid",
     [](Builder& b) {
       Setup s(b);
       nn::Module m("m");
       m.register_module("enc/ff", std::make_shared<nn::Linear>(s.in, s.out));  // MISTAKE: bad:module-name
     }},
    {"bad:param-dynamic-dim", "needs static dims",
     [](Builder& b) {
       Setup s(b);
       nn::Module m("m");
       m.register_parameter("w", {s.time}, ir::ParamKind::kWeight);  // MISTAKE: bad:param-dynamic-dim
     }},
    {"bad:negative-dropout", "dropout rate must be in [0, 1), got -0.1",
     [](Builder& b) {
       Setup s(b);
       nn::dropout(s.x, -0.1).mark_as_output();  // MISTAKE: bad:negative-dropout
     }},
    {"bad:dropout-one", "dropout rate must be in [0, 1), got 1",
     [](Builder& b) {
       Setup s(b);
       nn::dropout(s.x, 1.0).mark_as_output();  // MISTAKE: bad:dropout-one
     }},
    {"bad:weight-norm-twice", "already has weight norm",
     [](Builder& b) {
       Setup s(b);
       auto lin = std::make_shared<nn::Linear>(s.in, s.out);
       nn::weight_norm(*lin, "weight");
       nn::weight_norm(*lin, "weight");  // MISTAKE: bad:weight-norm-twice
     }},
    {"bad:reparametrize-non-param", "has no parameter 'forward'; reparametrizations apply to parameters only",
     [](Builder& b) {
       Setup s(b);
       auto lin = std::make_shared<nn::Linear>(s.in, s.out);
       nn::weight_dropout(*lin, "forward", 0.1);  // MISTAKE: bad:reparametrize-non-param
     }},
    {"bad:weight-norm-axis", "weight norm axis 'time'(dyn) is not a dim of 'weight'",
     [](Builder& b) {
       Setup s(b);
       auto lin = std::make_shared<nn::Linear>(s.in, s.out);
       nn::weight_norm(*lin, "weight", {s.time});  // MISTAKE: bad:weight-norm-axis
     }},
    {"bad:weight-dropout-rate", "weight dropout rate must be in [0, 1), got 2",
     [](Builder& b) {
       Setup s(b);
       auto lin = std::make_shared<nn::Linear>(s.in, s.out);
       nn::weight_dropout(*lin, "weight", 2.0);  // MISTAKE: bad:weight-dropout-rate
     }},
    {"bad:weight-noise-negative", "weight noise stddev must not be negative",
     [](Builder& b) {
       Setup s(b);
       auto lin = std::make_shared<nn::Linear>(s.in, s.out);
       nn::weight_noise(*lin, "weight", -0.5);  // MISTAKE: bad:weight-noise-negative
     }},
    {"bad:reparametrize-after-root", "register reparametrizations before set_root",
     [](Builder& b) {
       Setup s(b);
       auto lin = b.set_root(std::make_shared<nn::Linear>(s.in, s.out));
       nn::weight_norm(*lin, "weight");  // MISTAKE: bad:reparametrize-after-root
     }},
    {"bad:data-without-batch", "extern data 'feats' must start with the batch dim",
     [](Builder& b) {
       b.extern_data("feats", {Dim::feature("f", 3)});  // MISTAKE: bad:data-without-batch
     }},
    {"bad:data-twice", "extern data 'data' is declared twice",
     [](Builder& b) {
       Setup s(b);
       b.extern_data("data", {Dim::batch(), s.time, s.in});  // MISTAKE: bad:data-twice
     }},
    {"bad:data-dim-twice", "has the dim 'time'(dyn) twice",
     [](Builder& b) {
       Dim t = Dim::spatial("time");
       b.extern_data("data", {Dim::batch(), t, t});  // MISTAKE: bad:data-dim-twice
     }},
    {"bad:sparse-float-data", "is sparse and needs an integer dtype",
     [](Builder& b) {
       Dim t = Dim::spatial("time");
       b.extern_data("classes", {Dim::batch(), t}, ir::DType::kFloat32, Dim::feature("c", 2));  // MISTAKE: bad:sparse-float-data
     }},
    {"bad:data-key", "extern data key 'data:x' is invalid",
     [](Builder& b) {
       b.extern_data("data:x", {Dim::batch(), Dim::spatial("t")});  // MISTAKE: bad:data-key
     }},
    {"bad:loss-not-ce", "only a softmax_cross_entropy, ctc_loss, regression loss or custom_loss result can be a loss",
     [](Builder& b) {
       Setup s(b);
       nn::tanh(s.x).mark_as_loss("l");  // MISTAKE: bad:loss-not-ce
     }},
    {"bad:ce-dense-targets", "targets must be sparse (class indices)",
     [](Builder& b) {
       Setup s(b);
       auto lin = b.set_root(std::make_shared<nn::Linear>(s.in, s.out));
       nn::softmax_cross_entropy(lin->forward(s.x), s.x);  // MISTAKE: bad:ce-dense-targets
     }},
    {"bad:ce-no-class-dim", "lack the class dim 'out'(3)",
     [](Builder& b) {
       Setup s(b);
       nn::softmax_cross_entropy(s.x, s.y);  // MISTAKE: bad:ce-no-class-dim
     }},
    {"bad:lstm-axis-missing", "has no loop axis 'other'(dyn)",
     [](Builder& b) {
       Setup s(b);
       auto lstm = b.set_root(std::make_shared<nn::Lstm>(s.in, s.out));
       lstm->forward(s.x, Dim::spatial("other"));  // MISTAKE: bad:lstm-axis-missing
     }},
    {"bad:lstm-axis-feature", "loop axis 'input'(4) must be a spatial dim",
     [](Builder& b) {
       Setup s(b);
       auto lstm = b.set_root(std::make_shared<nn::Lstm>(s.in, s.out));
       lstm->forward(s.x, s.in);  // MISTAKE: bad:lstm-axis-feature
     }},
    {"bad:unknown-activation", "unknown activation 'relu6'",
     [](Builder& b) {
       Setup s(b);
       nn::activation(s.x, "relu6");  // MISTAKE: bad:unknown-activation
     }},
    {"bad:dot-reduce", "reduce dim 'out'(3) must be in both operands",
     [](Builder& b) {
       Setup s(b);
       nn::dot(s.x, nn::constant(b, 1.0, {s.in}), {s.out});  // MISTAKE: bad:dot-reduce
     }},
    {"bad:dtype-mismatch", "do not combine",
     [](Builder& b) {
       Setup s(b);
       auto root = std::make_shared<nn::Linear>(s.in, s.out);
       root->register_parameter("extra", {s.in}, ir::ParamKind::kWeight).set_dtype(ir::DType::kFloat64);
       b.set_root(root);
       nn::add(s.x, b.param(*root->find_parameter("extra")));  // MISTAKE: bad:dtype-mismatch
     }},
    {"bad:initial-dims", "initial value has dims",
     [](Builder& b) {
       Setup s(b);
       auto lin = std::make_shared<nn::Linear>(s.in, s.out);
       lin->weight().set_initial(nn::constant(b, 1.0, {s.in}));  // MISTAKE: bad:initial-dims
     }},
    {"bad:negative-weight-decay", "weight decay must not be negative",
     [](Builder& b) {
       Setup s(b);
       auto lin = std::make_shared<nn::Linear>(s.in, s.out);
       lin->weight().set_weight_decay(-1e-4);  // MISTAKE: bad:negative-weight-decay
       b.set_root(lin);
     }},
    {"bad:root-twice", "the root module is already set",
     [](Builder& b) {
       Setup s(b);
       b.set_root(std::make_shared<nn::Linear>(s.in, s.out));
       b.set_root(std::make_shared<nn::Linear>(s.in, s.out));  // MISTAKE: bad:root-twice
     }},
    {"bad:dtype-after-root", "the dtype must be set before set_root",
     [](Builder& b) {
       Setup s(b);
       auto lin = b.set_root(std::make_shared<nn::Linear>(s.in, s.out));
       lin->weight().set_dtype(ir::DType::kFloat64);  // MISTAKE: bad:dtype-after-root
     }},
    {"bad:mixed-weight-decay", "mixes both",
     [](Builder& b) {
       Setup s(b);
       auto m = std::make_shared<nn::Module>("pair");
       auto first = m->register_module("first", std::make_shared<nn::Linear>(s.in, s.out));
       auto second = m->register_module("second", std::make_shared<nn::Linear>(s.in, s.out));  // MISTAKE: bad:mixed-weight-decay
       first->weight().set_weight_decay(1e-4);
       second->weight().set_weight_decay(1e-4, nn::WeightDecayMode::kCoupled);
       b.set_root(m);
       nn::softmax_cross_entropy(first->forward(s.x) + second->forward(s.x), s.y).mark_as_loss("ce");
     }},
    {"bad:stage-violation", "a param-init node may not read data",
     [](Builder& b) {
       Setup s(b);
       auto lin = std::make_shared<nn::Linear>(s.in, s.in);
       Tensor from_data = nn::dot(s.x, s.x, {Dim::batch(), s.time});  // MISTAKE: bad:stage-violation
       lin->weight().set_initial(nn::constant(b, 0.0, {s.in, s.in}) * from_data);
       b.set_root(lin);
       lin->forward(s.x).mark_as_output();
     }},
    {"bad:fresh-random-initial", "the initial value of param 'weight' may not draw fresh random numbers",
     [](Builder& b) {
       Setup s(b);
       auto lin = std::make_shared<nn::Linear>(s.in, s.in);
       Tensor noise = nn::random_normal(b, {s.in, s.in});  // MISTAKE: bad:fresh-random-initial
       lin->weight().set_initial(noise);
       b.set_root(lin);
       lin->forward(s.x).mark_as_output();
     }},
    {"bad:specaugment-dynamic-feature", "specaugment: the feature dim",
     [](Builder& b) {
       Setup s(b);
       b.set_root(std::make_shared<nn::Linear>(s.in, s.out));
       nn::specaugment(s.x, s.in, s.time).mark_as_output();  // MISTAKE: bad:specaugment-dynamic-feature
     }},
    {"bad:conv-in-dim", "input dim 'input'(4) does not match in_dim 'other'(6)",
     [](Builder& b) {
       Setup s(b);
       auto conv = b.set_root(std::make_shared<nn::Conv1d>(nn::Conv1dOptions(Dim::feature("other", 6), s.out, 3)));
       conv->forward(s.x, s.time).mark_as_output();  // MISTAKE: bad:conv-in-dim
     }},
    {"bad:conv-feature-axis", "the spatial axis 'out'(3) is not in the input",
     [](Builder& b) {
       Setup s(b);
       auto conv = b.set_root(std::make_shared<nn::Conv1d>(nn::Conv1dOptions(s.in, s.in, 3)));
       conv->forward(s.x, s.out).mark_as_output();  // MISTAKE: bad:conv-feature-axis
     }},
    {"bad:transposed-conv-kernel", "the kernel (2) must be at least the stride (3)",
     [](Builder& b) {
       Setup s(b);
       auto up = b.set_root(std::make_shared<nn::TransposedConv1d>(nn::TransposedConv1dOptions(s.in, s.in, 2).stride(3)));
       up->forward(s.x, s.time).mark_as_output();  // MISTAKE: bad:transposed-conv-kernel
     }},
    {"bad:replace-dim-without-lengths", "needs the tensor that has it (its lengths)",
     [](Builder& b) {
       Setup s(b);
       b.set_root(std::make_shared<nn::Linear>(s.in, s.out));
       nn::replace_dim(s.x, s.in, Dim::spatial("other_time")).mark_as_output();  // MISTAKE: bad:replace-dim-without-lengths
     }},
    {"bad:focal-mse", "the focal loss factor applies to the cross-entropy loss only",
     [](Builder& b) {
       Setup s(b);
       auto lin = b.set_root(std::make_shared<nn::Linear>(s.in, s.in));
       nn::mean_squared_error(lin->forward(s.x), s.x, {.focal_loss_factor = 2.0}).mark_as_loss("mse");  // MISTAKE: bad:focal-mse
     }},
    {"bad:concat-dynamic-tf", "concat along the dynamic axis 'time'(dyn): RETURNN's TF concat layer puts the second part after the first part's padding",
     [](Builder& b) {
       Setup s(b);
       auto lin = b.set_root(std::make_shared<nn::Linear>(s.in, s.in));
       nn::concat(lin->forward(s.x), s.time, s.x, s.time).mark_as_output();  // MISTAKE: bad:concat-dynamic-tf
     }},
    {"bad:groups", "must divide into 3 groups",
     [](Builder& b) {
       Setup s(b);
       auto conv = b.set_root(std::make_shared<nn::Conv1d>(nn::Conv1dOptions(s.in, s.in, 3).groups(3)));
       conv->forward(s.x, s.time).mark_as_output();  // MISTAKE: bad:groups
     }},
    {"bad:avg-pool-same", "average pooling over the dynamic axis 'time'(dyn) needs padding \"valid\"",
     [](Builder& b) {
       Setup s(b);
       b.set_root(std::make_shared<nn::Linear>(s.in, s.out));
       nn::pool(s.x, "avg", {s.time}, {2}).mark_as_output();  // MISTAKE: bad:avg-pool-same
     }},
    {"bad:split-parts", "split: the parts ['a'(1), 'b'(2)] do not add up to 'input'(4)",
     [](Builder& b) {
       Setup s(b);
       b.set_root(std::make_shared<nn::Linear>(s.in, s.out));
       nn::split(s.x, s.in, {Dim::feature("a", 1), Dim::feature("b", 2)});  // MISTAKE: bad:split-parts
     }},
    {"bad:merge-sizes", "cannot merge into 'merged'(5)",
     [](Builder& b) {
       Setup s(b);
       b.set_root(std::make_shared<nn::Linear>(s.in, s.out));
       Dim two = Dim::feature("two", 2), other = Dim::feature("other", 2);
       Tensor h = nn::split_dims(s.x, s.in, {two, other});
       nn::merge_dims(h, {two, other}, Dim::feature("merged", 5));  // MISTAKE: bad:merge-sizes
     }},
    {"bad:ctc-no-blank", "ctc_loss: the logits [B, 'time'(dyn), 'out'(3)] float32 need the dim 'out'(3) + blank",
     [](Builder& b) {
       Setup s(b);
       auto lin = b.set_root(std::make_shared<nn::Linear>(s.in, s.out));
       nn::ctc_loss(lin->forward(s.x), s.y, s.time).mark_as_loss("ctc");  // MISTAKE: bad:ctc-no-blank
     }},
    {"bad:ctc-static-axis", "the input axis 'input'(4) must be a dynamic axis",
     [](Builder& b) {
       Setup s(b);
       Dim with_blank = s.out + Dim::feature("blank", 1);
       auto lin = b.set_root(std::make_shared<nn::Linear>(s.in, with_blank));
       Tensor logits = lin->forward(s.x) + nn::constant(b, 0.0, {s.in});
       nn::ctc_loss(logits, s.y, s.in).mark_as_loss("ctc");  // MISTAKE: bad:ctc-static-axis
     }},
    {"bad:ctc-extra-dim", "ctc_loss: the logits [B, 'time'(dyn), 'out+blank'(4), 'branch'(2)] float32 must have the batch, the axis 'time'(dyn) and the classes + blank, nothing else (merge or reduce ['branch'(2)] first)",
     [](Builder& b) {
       Setup s(b);
       Dim with_blank = s.out + Dim::feature("blank", 1);
       auto lin = b.set_root(std::make_shared<nn::Linear>(s.in, with_blank));
       Tensor logits = lin->forward(s.x) * nn::constant(b, 1.0, {Dim::feature("branch", 2)});
       nn::ctc_loss(logits, s.y, s.time).mark_as_loss("ctc");  // MISTAKE: bad:ctc-extra-dim
     }},
    {"bad:mask-static-axis", "the axis 'input'(4) must be a dynamic axis",
     [](Builder& b) {
       Setup s(b);
       b.set_root(std::make_shared<nn::Linear>(s.in, s.out));
       nn::mask_padding(s.x, s.in).mark_as_output();  // MISTAKE: bad:mask-static-axis
     }},
    {"bad:cross-attention-axis", "the memory axis 'time'(dyn) must be a dynamic axis of the memory",
     [](Builder& b) {
       Setup s(b);
       auto att = b.set_root(std::make_shared<nn::CrossAttention>(s.in, s.in, s.in, s.in, 2));
       Tensor memory = nn::reduce(s.x, "mean", {s.time});
       att->forward(s.x, memory, s.time).mark_as_output();  // MISTAKE: bad:cross-attention-axis
     }},
    {"bad:rel-pos-static-axis", "must be the only dynamic dim",
     [](Builder& b) {
       Setup s(b);
       auto att = b.set_root(std::make_shared<nn::SelfAttention>(nn::SelfAttentionOptions(s.in, s.in, s.in, 2).rel_pos_clipping(4)));
       att->forward(s.x, s.in).mark_as_output();  // MISTAKE: bad:rel-pos-static-axis
     }},
    {"bad:conformer-features", "conformer_frontend '<root>': input dim 'input'(4) does not match in_dim 'mel'(80)",
     [](Builder& b) {
       Setup s(b);
       auto front = b.set_root(std::make_shared<nn::ConformerFrontend>(Dim::feature("mel", 80), s.out));
       front->forward(s.x, s.time).mark_as_output();  // MISTAKE: bad:conformer-features
     }},
    {"bad:loop-state-no-initial", "loop state without an initial value",
     [](Builder& b) {
       Setup s(b);
       b.set_root(std::make_shared<nn::Linear>(s.in, s.out));
       nn::Loop loop(b, s.time);
       loop.state(Tensor());  // MISTAKE: bad:loop-state-no-initial
     }},
    {"bad:loop-state-no-next", "loop state without a next value",
     [](Builder& b) {
       Setup s(b);
       b.set_root(std::make_shared<nn::Linear>(s.in, s.out));
       nn::Loop loop(b, s.time);
       loop.state(nn::constant(b, 0.0, {s.in}), {Dim::batch(), s.in});  // MISTAKE: bad:loop-state-no-next
       Tensor x_t = loop.unstack(s.x);
       loop.stack(x_t + x_t).mark_as_output();
       loop.end();
     }},
    {"bad:loop-value-outside", "reads a value computed in the loop over 'time'(dyn) outside that loop",
     [](Builder& b) {
       Setup s(b);
       b.set_root(std::make_shared<nn::Linear>(s.in, s.out));
       nn::Loop loop(b, s.time);
       Tensor x_t = loop.unstack(s.x);
       loop.end();
       nn::tanh(x_t).mark_as_output();  // MISTAKE: bad:loop-value-outside
     }},
    {"bad:loop-nested", "loops do not nest yet",
     [](Builder& b) {
       Setup s(b);
       b.set_root(std::make_shared<nn::Linear>(s.in, s.out));
       nn::Loop outer(b, s.time);
       nn::Loop inner(b, s.time);  // MISTAKE: bad:loop-nested
     }},
    {"bad:loop-axis-kind", "loop: the axis 'input'(4) must be a spatial dim",
     [](Builder& b) {
       Setup s(b);
       b.set_root(std::make_shared<nn::Linear>(s.in, s.out));
       nn::Loop loop(b, s.in);  // MISTAKE: bad:loop-axis-kind
     }},
    {"bad:loop-next-type", "the next value [B, 'out'(3)] float32 of a loop state must have the state's type",
     [](Builder& b) {
       Setup s(b);
       auto lin = b.set_root(std::make_shared<nn::Linear>(s.in, s.out));
       nn::Loop loop(b, s.time);
       Tensor h = loop.state(nn::constant(b, 0.0, {s.in}), {Dim::batch(), s.in});
       loop.next(h, lin->forward(loop.unstack(s.x)));  // MISTAKE: bad:loop-next-type
     }},
    {"bad:loop-mark-inner", "has one value per frame; mark loop.stack(value) instead",
     [](Builder& b) {
       Setup s(b);
       b.set_root(std::make_shared<nn::Linear>(s.in, s.out));
       nn::Loop loop(b, s.time);
       loop.unstack(s.x).mark_as_output();  // MISTAKE: bad:loop-mark-inner
     }},
    {"bad:child-weight-decay", "parameter 'a.weight': weight decay must not be negative",
     [](Builder& b) {
       Setup s(b);
       auto m = b.set_root(std::make_shared<Pair>(s.in, s.out));
       m->a->weight().set_weight_decay(-0.1);  // MISTAKE: bad:child-weight-decay
       m->a->forward(s.x).mark_as_output();
     }},
    {"bad:option-via-apply", "parameter 'b.bias': the learning-rate multiplier must not be negative",
     [](Builder& b) {
       Setup s(b);
       auto m = b.set_root(std::make_shared<Pair>(s.in, s.out));
       m->apply_params({ir::ParamKind::kBias, "b"}, [](const std::string&, nn::ParamSetter& p) {
         p.set_lr_multiplier(-2.0);  // MISTAKE: bad:option-via-apply
       });
       m->b->forward(s.x).mark_as_output();
     }},
    {"bad:zero-size-dim", "parameter 'weight': the dim 'zero'(0) has size 0",
     [](Builder& b) {
       Setup s(b);
       auto lin = std::make_shared<nn::Linear>(s.in, Dim::feature("zero", 0));  // MISTAKE: bad:zero-size-dim
       b.set_root(lin)->forward(s.x).mark_as_output();
     }},
    {"bad:zero-size-data", "extern data 'feats': the dim 'f'(0) has size 0",
     [](Builder& b) {
       Setup s(b);
       b.extern_data("feats", {Dim::batch(), s.time, Dim::feature("f", 0)});  // MISTAKE: bad:zero-size-data
     }},
    {"bad:no-output", "the model marks no output and no loss",
     [](Builder& b) {
       Setup s(b);
       auto lin = b.set_root(std::make_shared<nn::Linear>(s.in, s.out));  // MISTAKE: bad:no-output
       lin->forward(s.x);
     }},
    {"bad:name-wanted-twice", "the RETURNN layer name \"weight\" of output \"weight\" is wanted by param \"weight\" too",
     [](Builder& b) {
       Setup s(b);
       auto lin = b.set_root(std::make_shared<nn::Linear>(s.in, s.out));
       lin->forward(s.x).mark_as_output("weight");  // MISTAKE: bad:name-wanted-twice
     }},
    {"bad:module-name-newline", "module name 'a\\nb' is invalid",
     [](Builder& b) {
       struct M : nn::Module {
         explicit M(Dim in) : Module("m") {
           register_module("a\nb", std::make_shared<nn::Linear>(in, in));  // MISTAKE: bad:module-name-newline
         }
       };
       Setup s(b);
       b.set_root(std::make_shared<M>(s.in));
     }},
    {"bad:loop-not-ended", "never ends: call loop.end()",
     [](Builder& b) {
       Setup s(b);
       b.set_root(std::make_shared<nn::Linear>(s.in, s.out));
       nn::Loop loop(b, s.time);  // MISTAKE: bad:loop-not-ended
       loop.stack(loop.unstack(s.x)).mark_as_output();
     }},
    {"bad:loop-new-axis-no-end", "runs over a new axis (no value outside the loop has it), so it needs an end condition and a maximal length",
     [](Builder& b) {
       Setup s(b);
       b.set_root(std::make_shared<nn::Linear>(s.in, s.out));
       nn::Loop loop(b, Dim::spatial("steps"));
       Tensor h = loop.state(nn::constant(b, 0.0), {Dim::batch(), s.in});
       loop.next(h, nn::tanh(h));
       loop.end();  // MISTAKE: bad:loop-new-axis-no-end
       loop.stack(h).mark_as_output();
     }},
    {"bad:loop-max-len", "loop.end: the maximal length must be positive, got 0",
     [](Builder& b) {
       Setup s(b);
       b.set_root(std::make_shared<nn::Linear>(s.in, s.out));
       nn::Loop loop(b, Dim::spatial("steps"));
       Tensor h = loop.state(nn::constant(b, 0.0), {Dim::batch(), s.in});
       loop.next(h, nn::tanh(h));
       loop.end(nn::compare(h, h, "not_equal"), 0);  // MISTAKE: bad:loop-max-len
       loop.stack(h).mark_as_output();
     }},
    {"bad:choice-in-training", "choice: the train task computes 'bad:choice-in-training' with a loop's choice, which only search makes",
     [](Builder& b) {
       Setup s(b);
       auto lin = b.set_root(std::make_shared<nn::Linear>(s.in, s.out));
       nn::Loop loop(b, Dim::spatial("steps"));
       Tensor h = loop.state(nn::constant(b, 0.0), {Dim::batch(), s.in});
       Tensor y = loop.choice(nn::log_softmax(lin->forward(h), s.out), s.out);  // MISTAKE: bad:choice-in-training
       loop.next(h, nn::tanh(h));
       loop.end(nn::compare(nn::cast(y, ir::DType::kFloat32), nn::constant(b, 0.0), "equal"), 5);
       nn::cast(loop.stack(y), ir::DType::kFloat32).mark_as_output();
     }},
    {"bad:cond-branch-value-outside", "reads a value computed in a branch of nn::cond outside that branch; return it from the branch",
     [](Builder& b) {
       Setup s(b);
       auto lin = b.set_root(std::make_shared<nn::Linear>(s.in, s.out));
       Tensor inner;
       Tensor y = nn::cond(nn::train_flag(b), [&] { inner = lin->forward(s.x); return inner; }, [&] { return lin->forward(s.x); });
       nn::add(y, inner).mark_as_output();  // MISTAKE: bad:cond-branch-value-outside
     }},
    {"bad:search-output-dense", "search output 'hyps': [B, 'time'(dyn), 'out'(3)] float32 is not sparse",
     [](Builder& b) {
       Setup s(b);
       auto lin = b.set_root(std::make_shared<nn::Linear>(s.in, s.out));
       Tensor y = lin->forward(s.x);
       y.mark_as_output();
       y.mark_as_search_output();  // MISTAKE: bad:search-output-dense
     }},
    {"bad:reverse-axis", "reverse: the axis 'out'(3) is not a non-batch axis of [B, 'time'(dyn), 'input'(4)] float32",
     [](Builder& b) {
       Setup s(b);
       nn::reverse(s.x, s.out).mark_as_output();  // MISTAKE: bad:reverse-axis
     }},
    {"bad:slice-float-start", "slice: the start [B] float32 must be int32 over the batch of",
     [](Builder& b) {
       Setup s(b);
       Tensor start = nn::reduce(s.x, "mean", {s.time, s.in});
       nn::slice(s.x, s.time, start, Dim::spatial("w", 2)).mark_as_output();  // MISTAKE: bad:slice-float-start
     }},
    {"bad:indices-from-bool", "as_indices: needs ints or floats, got [B, 'time'(dyn), 'input'(4)] bool",
     [](Builder& b) {
       Setup s(b);
       Tensor mask = nn::compare(s.x, s.x, "less");
       nn::gather(s.x, nn::as_indices(mask, s.time), s.time).mark_as_output();  // MISTAKE: bad:indices-from-bool
     }},
    // Options with a range, checked where they are written (a module's at the
    // line that registers it: its constructor's line), not at forward.
    {"bad:attention-heads-divide", "3 heads do not divide the key dim 'key'(8)",
     [](Builder& b) {
       Setup s(b);
       nn::SelfAttentionOptions o(s.in, Dim::feature("key", 8), Dim::feature("value", 6), 3);
       auto root = std::make_shared<nn::Module>("net");
       root->register_module("att", std::make_shared<nn::SelfAttention>(o));  // MISTAKE: bad:attention-heads-divide
     }},
    {"bad:cross-attention-zero-heads", "num_heads must be at least 1, got 0",
     [](Builder& b) {
       Setup s(b);
       b.set_root(std::make_shared<nn::CrossAttention>(s.in, s.in, s.in, s.in, 0));  // MISTAKE: bad:cross-attention-zero-heads
     }},
    {"bad:transformer-activation",
     "ff_activation \"relu2\" is not an activation (nn::activation's or relu_square)",
     [](Builder& b) {
       Setup s(b);
       auto o = nn::TransformerOptions(s.in, s.in, 1).ff_activation("relu2");
       b.set_root(std::make_shared<nn::TransformerEncoderLayer>(o));  // MISTAKE: bad:transformer-activation
     }},
    {"bad:transformer-act-dropout", "act_dropout must be in [0, 1), got 1",
     [](Builder& b) {
       Setup s(b);
       auto o = nn::TransformerOptions(s.in, s.in, 1).act_dropout(1.0);
       b.set_root(std::make_shared<nn::TransformerDecoderLayer>(o));  // MISTAKE: bad:transformer-act-dropout
     }},
    {"bad:self-attention-bias-rel-pos", "qkv_bias with rel_pos_clipping",
     [](Builder& b) {
       Setup s(b);
       nn::SelfAttentionOptions o(s.in, s.in, s.in, 1);
       b.set_root(std::make_shared<nn::SelfAttention>(o.qkv_bias(true).rel_pos_clipping(4)));  // MISTAKE: bad:self-attention-bias-rel-pos
     }},
    {"bad:sparse-constant-label", "sparse_constant: the label 3 must be in [0, 3) of the vocab",
     [](Builder& b) {
       Setup s(b);
       nn::sparse_constant(b, 3, s.out);  // MISTAKE: bad:sparse-constant-label
     }},
    {"bad:stft-fft-length", "stft: frame_length (400) must be at least 2, frame_step (160) at least 1, and fft_length (256) at least frame_length",
     [](Builder& b) {
       Setup s(b);
       nn::stft(nn::reduce(s.x, "sum", {s.in}), s.time, 400, 160, 256);  // MISTAKE: bad:stft-fft-length
     }},
    {"bad:mel-filterbank-range", "mel_filterbank: needs 0 <= f_min < f_max and a positive sampling rate, got f_min 9000, f_max 8000",
     [](Builder& b) {
       Setup s(b);
       nn::mel_filterbank(s.x, s.in, s.out, 16000, 9000);  // MISTAKE: bad:mel-filterbank-range
     }},
    {"bad:transducer-classes", "transducer_loss: the logits must be float [batch, 'time'(dyn), 'time'(dyn), labels + blank] with 4 classes (blank last)",
     [](Builder& b) {
       Setup s(b);
       nn::transducer_loss(s.x, s.y, s.time, s.time, s.time);  // MISTAKE: bad:transducer-classes
     }},
    {"bad:rotary-odd-head", "rotary positions need an even key dim per head (got 3)",
     [](Builder& b) {
       Setup s(b);
       b.set_root(std::make_shared<nn::SelfAttention>(nn::SelfAttentionOptions(s.in, s.out, s.out, 1).rotary(true)));  // MISTAKE: bad:rotary-odd-head
     }},
    {"bad:conv-stride-zero", "strides must be at least 1, got 0",
     [](Builder& b) {
       Setup s(b);
       b.set_root(std::make_shared<nn::Conv1d>(nn::Conv1dOptions(s.in, s.out, 3).stride(0)));  // MISTAKE: bad:conv-stride-zero
     }},
    {"bad:conv-dilation-zero", "the dilation must be at least 1, got 0",
     [](Builder& b) {
       Setup s(b);
       auto root = std::make_shared<nn::Module>("net");
       root->register_module("conv", std::make_shared<nn::Conv1d>(nn::Conv1dOptions(s.in, s.out, 3).dilation(0)));  // MISTAKE: bad:conv-dilation-zero
     }},
    {"bad:batch-norm-momentum", "momentum must be in [0, 1], got 1.5",
     [](Builder& b) {
       Setup s(b);
       b.set_root(std::make_shared<nn::BatchNorm>(s.in, 1e-5, 1.5));  // MISTAKE: bad:batch-norm-momentum
     }},
    {"bad:zoneout-probability", "zoneout probabilities must be in [0, 1], got 1.5",
     [](Builder& b) {
       Setup s(b);
       b.set_root(std::make_shared<nn::ZoneoutLstm>(s.in, s.out, 1.5));  // MISTAKE: bad:zoneout-probability
     }},
    {"bad:weight-decay-nan", "weight decay must not be negative (nor NaN or inf), got nan",
     [](Builder& b) {
       Setup s(b);
       auto lin = std::make_shared<nn::Linear>(s.in, s.out);
       lin->weight().set_weight_decay(std::nan(""));  // MISTAKE: bad:weight-decay-nan
       b.set_root(lin);
     }},
    {"bad:initial-nan", "initial value: the constant must be finite, got nan",
     [](Builder& b) {
       Setup s(b);
       auto lin = std::make_shared<nn::Linear>(s.in, s.out);
       lin->bias().set_initial(ir::Initializer::constant(std::nan("")));  // MISTAKE: bad:initial-nan
       b.set_root(lin);
     }},
    {"bad:initial-negative-stddev", "initial value: the stddev must be finite and not negative, got -0.1",
     [](Builder& b) {
       Setup s(b);
       auto lin = std::make_shared<nn::Linear>(s.in, s.out);
       lin->weight().set_initial(ir::Initializer::normal(0, -0.1));  // MISTAKE: bad:initial-negative-stddev
       b.set_root(lin);
     }},
    {"bad:repeat-negative", "repeat: the repetitions must not be negative, got -1",
     [](Builder& b) {
       Setup s(b);
       b.set_root(std::make_shared<nn::Linear>(s.in, s.out));
       nn::repeat(s.x, s.time, -1, Dim::spatial("repeated")).mark_as_output();  // MISTAKE: bad:repeat-negative
     }},
    {"bad:sequential-same-module", "is already registered",
     [](Builder& b) {
       Setup s(b);
       auto seq = std::make_shared<nn::Sequential>();
       auto lin = std::make_shared<nn::Linear>(s.in, s.in);
       seq->append(lin);
       seq->append(lin);  // MISTAKE: bad:sequential-same-module
       b.set_root(seq);
     }},
    {"bad:loop-stack-inside", "reads loop.stack(...) of the loop over 'time'(dyn) inside that loop",
     [](Builder& b) {
       Setup s(b);
       b.set_root(std::make_shared<nn::Linear>(s.in, s.out));
       nn::Loop loop(b, s.time);
       Tensor stacked = loop.stack(nn::tanh(loop.unstack(s.x)));
       nn::reduce(stacked, "sum", {s.time});  // MISTAKE: bad:loop-stack-inside
       loop.end();
     }},
    {"bad:loop-done-feature", "loop.end: the end condition must be one flag per sequence ([B]), got [B, 'input'(4)]; reduce it",
     [](Builder& b) {
       Setup s(b);
       b.set_root(std::make_shared<nn::Linear>(s.in, s.out));
       nn::Loop loop(b, Dim::spatial("steps"));
       Tensor h = loop.state(nn::constant(b, 0.0), {Dim::batch(), s.in});
       loop.next(h, nn::tanh(h));
       loop.end(nn::compare(h, h, "not_equal"), 5);  // MISTAKE: bad:loop-done-feature
       loop.stack(h).mark_as_output();
     }},
    {"bad:masked-select-mask-dims", "the tf target packs whole frames (RETURNN's masked_computation): the mask must be over the batch and 'time'(dyn) only, got [B, 'time'(dyn), 'input'(4)] bool; reduce it, or use --backend torch",
     [](Builder& b) {
       Setup s(b);
       b.set_root(std::make_shared<nn::Linear>(s.in, s.out));
       const Tensor mask = nn::compare(s.x, nn::constant(b, 0.0), "greater");
       nn::masked_select(s.x, mask, s.time, Dim::spatial("kept")).mark_as_output();  // MISTAKE: bad:masked-select-mask-dims
     }},
    {"bad:range-of-lengths-float", "range_of_lengths: the lengths must be int32 [B], got [B] float32",
     [](Builder& b) {
       Setup s(b);
       b.set_root(std::make_shared<nn::Linear>(s.in, s.out));
       const Tensor n = nn::cast(nn::length(s.x, s.time), ir::DType::kFloat32);
       nn::range_of_lengths(n, Dim::spatial("new")).mark_as_output();  // MISTAKE: bad:range-of-lengths-float
     }},
    {"bad:scatter-mode", "scatter: mode must be sum, max, min, mean, logsumexp or argmax, got 'median'",
     [](Builder& b) {
       Setup s(b);
       b.set_root(std::make_shared<nn::Linear>(s.in, s.out));
       nn::scatter(s.x, s.y, s.time, "median").mark_as_output();  // MISTAKE: bad:scatter-mode
     }},
    {"bad:scatter-dense-indices", "scatter: needs int indices sparse over the out dim, got [B, 'time'(dyn), 'input'(4)] float32",
     [](Builder& b) {
       Setup s(b);
       b.set_root(std::make_shared<nn::Linear>(s.in, s.out));
       nn::scatter(s.x, s.x, s.time).mark_as_output();  // MISTAKE: bad:scatter-dense-indices
     }},
    {"bad:conformer-block-module", "conformer_block '<root>': block_modules entry \"attention\" is not \"ff\", \"mhsa\" or \"conv\"",
     [](Builder& b) {
       Setup s(b);
       b.set_root(std::make_shared<nn::ConformerBlock>(  // MISTAKE: bad:conformer-block-module
           s.in, Dim::feature("ff", 8), nn::ConformerOptions().num_heads(2).block_modules({"ff", "attention"})));
     }},
    {"bad:conformer-block-scales", "block_scales has 1 entries for 4 block_modules",
     [](Builder& b) {
       Setup s(b);
       b.set_root(std::make_shared<nn::ConformerBlock>(  // MISTAKE: bad:conformer-block-scales
           s.in, Dim::feature("ff", 8), nn::ConformerOptions().num_heads(2).block_scales({0.5})));
     }},
    {"bad:rel-pos-dropout-xl", "rel_pos_dropout 1.5 is not a dropout rate in [0, 1)",
     [](Builder& b) {
       Setup s(b);
       b.set_root(std::make_shared<nn::ConformerBlock>(  // MISTAKE: bad:rel-pos-dropout-xl
           s.in, Dim::feature("ff", 8), nn::ConformerOptions().num_heads(2).rel_pos_xl(true).rel_pos_dropout(1.5)));
     }},
    {"bad:conformer-frontend", "frontend \"vgg4\" is not \"vgg\", \"conv1d\" or \"linear\"",
     [](Builder& b) {
       Setup s(b);
       b.set_root(std::make_shared<nn::ConformerFrontend>(  // MISTAKE: bad:conformer-frontend
           s.in, s.in, nn::ConformerOptions().frontend("vgg4")));
     }},
    {"bad:assign-trainable", "assigning parameter 'bias': it is trainable, and the optimizer would update it too",
     [](Builder& b) {
       Setup s(b);
       auto lin = b.set_root(std::make_shared<nn::Linear>(s.in, s.out));
       nn::assign(lin->bias(), b.param(lin->bias()) * nn::constant(b, 0.5));  // MISTAKE: bad:assign-trainable
     }},
    {"bad:assign-in-loop", "assigning parameter 'bias': not inside a loop (a step assigns once)",
     [](Builder& b) {
       Setup s(b);
       auto lin = std::make_shared<nn::Linear>(s.in, s.out);
       lin->bias().set_trainable(false);
       b.set_root(lin);
       nn::Loop loop(b, s.time);
       const Tensor h = lin->forward(loop.unstack(s.x));
       nn::assign(lin->bias(), nn::reduce(h, "mean", {Dim::batch()}));  // MISTAKE: bad:assign-in-loop
       loop.stack(h).mark_as_output();
       loop.end();
     }},
    {"bad:assign-in-cond", "assigning parameter 'bias': not inside a branch of nn::cond",
     [](Builder& b) {
       Setup s(b);
       auto lin = std::make_shared<nn::Linear>(s.in, s.out);
       lin->bias().set_trainable(false);
       b.set_root(lin);
       const Tensor bias = b.param(lin->bias());
       nn::cond(nn::train_flag(b), [&] {
         nn::assign(lin->bias(), bias * nn::constant(b, 0.5));  // MISTAKE: bad:assign-in-cond
         return bias;
       }, [&] { return bias; }).mark_as_output();
     }},
    {"bad:assign-reparametrized", "assigning parameter 'weight': it has a reparametrization (weight norm, dropout or noise)",
     [](Builder& b) {
       Setup s(b);
       auto lin = std::make_shared<nn::Linear>(s.in, s.out);
       nn::weight_noise(*lin, "weight", 0.1);
       b.set_root(lin);
       nn::assign(lin->weight(), b.param(lin->weight()));  // MISTAKE: bad:assign-reparametrized
     }},
    {"bad:assign-reads-weight-noise", "on the tf target, an assigned value cannot read a param with weight",
     [](Builder& b) {
       Setup s(b);
       auto lin = std::make_shared<nn::Linear>(s.in, s.out);
       nn::weight_noise(*lin, "weight", 0.1);
       lin->bias().set_trainable(false);
       b.set_root(lin);
       const Tensor h = lin->forward(s.x);
       nn::assign(lin->bias(), nn::reduce(h, "mean", {Dim::batch(), s.time}));  // MISTAKE: bad:assign-reads-weight-noise
       h.mark_as_output();
     }},
};
// clang-format on

}  // namespace

std::vector<ModelDef> bad_model_cases() {
  std::vector<ModelDef> out;
  for (const Case& c : kCases) out.push_back(ModelDef{c.name, c.expected, c.build, {}});
  // Pretraining stages that do not grow: stage 0 has a layer the last lacks.
  ModelDef shrinks{"bad:stage-shrinks",
                   "which the last stage lacks: each stage's params must be",
                   [](Builder& b) {
                     Setup s(b);
                     auto root = std::make_shared<nn::Module>("net");
                     auto extra = std::make_shared<nn::Linear>(s.in, s.in);
                     if (b.stage() == 0)
                       root->register_module("extra", extra);  // MISTAKE: bad:stage-shrinks
                     auto out =
                         root->register_module("out", std::make_shared<nn::Linear>(s.in, s.out));
                     b.set_root(root);
                     nn::softmax_cross_entropy(out->forward(s.x), s.y).mark_as_loss("ce");
                   },
                   {}};
  shrinks.stage_epochs = {2};
  out.push_back(std::move(shrinks));
  return out;
}

}  // namespace retc::testing
