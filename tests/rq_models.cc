// Models that retc once accepted and RETURNN then rejected: outer broadcasts
// in elementwise ops, loop states whose initial value lacks the state's dims,
// forward-only models, shifted sparse labels and embeddings feeding a loop,
// batched gather. tests/integration/test_modules.py runs each in RETURNN
// (one step; numbers against numpy where there are numbers to check).
#include "compiler/nn/loop.h"
#include "compiler/nn/modules.h"
#include "tests/tagging_io.h"
#include "tests/test_models.h"

namespace retc::testing {
namespace {

using ir::Dim;
using nn::Builder;
using nn::Tensor;

using Io = TaggingIo;

// [B, T, classes] + [B, input]: no input has all of the result's dims.
void build_outer_broadcast(Builder& b) {
  Io io(b);
  auto lin = b.set_root(std::make_shared<nn::Linear>(io.in, io.classes));
  Tensor logits = lin->forward(io.x);
  (logits + nn::reduce(io.x, "mean", {io.time})).mark_as_output("bcast");
  io.finish(logits);
}

// Teacher forcing on labels: the labels shifted right, BOS (index 5) first,
// embedded.
void build_shift_labels(Builder& b) {
  Dim vocab = Dim::feature("vocab", 6);
  Io io(b, vocab);
  struct Net : nn::Module {
    Dim e = Dim::feature("e", 4);
    Net(Dim vocab, Dim out) : Module("shift_labels") {
      embed = register_module("embed", std::make_shared<nn::Embedding>(vocab, e));
      out_ = register_module("out", std::make_shared<nn::Linear>(e, out));
    }
    std::shared_ptr<nn::Embedding> embed;
    std::shared_ptr<nn::Linear> out_;
  };
  auto m = b.set_root(std::make_shared<Net>(vocab, io.classes));
  Tensor shifted = nn::shift_right(io.x, io.time, 1, 5);
  shifted.mark_as_output("shifted");
  io.finish(m->out_->forward(m->embed->forward(shifted)));
}

// A decoder over the labels' own axis: shift_right(embed(labels)) feeds a
// loop whose stacked output is trained against the labels.
void build_shift_embed_loop(Builder& b) {
  Dim time = Dim::spatial("time"), label_time = Dim::spatial("label_time");
  Dim in = Dim::feature("input", 5), vocab = Dim::feature("vocab", 6);
  b.extern_data("data", {Dim::batch(), time, in});
  Tensor y = b.extern_data("classes", {Dim::batch(), label_time}, ir::DType::kInt32, vocab);
  struct Net : nn::Module {
    Dim e = Dim::feature("e", 4), hidden = Dim::feature("hidden", 3);
    Net(Dim vocab) : Module("decoder") {
      embed = register_module("embed", std::make_shared<nn::Embedding>(vocab, e));
      in_ = register_module("in", std::make_shared<nn::Linear>(e, hidden));
      rec = register_module("rec", std::make_shared<nn::Linear>(hidden, hidden, false));
      out_ = register_module("out", std::make_shared<nn::Linear>(hidden, vocab));
    }
    std::shared_ptr<nn::Embedding> embed;
    std::shared_ptr<nn::Linear> in_, rec, out_;
  };
  auto m = b.set_root(std::make_shared<Net>(vocab));
  Tensor dec_in = nn::shift_right(m->embed->forward(y), label_time);
  nn::Loop loop(b, label_time);
  Tensor h = loop.state(nn::constant(b, 0.0, {m->hidden}), {Dim::batch(), m->hidden});
  Tensor h_new = nn::tanh(m->in_->forward(loop.unstack(dec_in)) + m->rec->forward(h));
  loop.next(h, h_new);
  loop.end();
  Tensor logits = m->out_->forward(loop.stack(h_new));
  logits.mark_as_output();
  nn::softmax_cross_entropy(logits, y).mark_as_loss("ce");
}

// Gather with indices that share the batch dim with the data: per sequence,
// the slot its index picks.
void build_gather_batch(Builder& b) {
  Dim slots = Dim::spatial("slots", 4), in = Dim::feature("input", 5);
  Dim classes = Dim::feature("classes", 3);
  Tensor x = b.extern_data("data", {Dim::batch(), slots, in});
  Tensor pick = b.extern_data("pick", {Dim::batch()}, ir::DType::kInt32, slots);
  auto lin = b.set_root(std::make_shared<nn::Linear>(in, classes));
  Tensor picked = nn::gather(x, pick, slots);
  picked.mark_as_output("picked");
  lin->forward(picked).mark_as_output("logits");
}

// where(cond [B, input], logits [B, T, classes], 0): no input has all dims.
void build_where_broadcast(Builder& b) {
  Io io(b);
  auto lin = b.set_root(std::make_shared<nn::Linear>(io.in, io.classes));
  Tensor logits = lin->forward(io.x);
  Tensor cond = nn::compare(nn::reduce(io.x, "mean", {io.time}), nn::constant(b, 0.0), "greater");
  nn::where(cond, logits, nn::constant(b, 0.0)).mark_as_output("selected");
  io.finish(logits);
}

// Attention's weighted sum: weights [B, T, heads] * values [B, T, input],
// summed over T: [B, heads, input].
void build_attention_sum(Builder& b) {
  Io io(b);
  struct Net : nn::Module {
    Dim heads = Dim::feature("heads", 2);
    Net(Dim in, Dim out) : Module("att_sum") {
      score = register_module("score", std::make_shared<nn::Linear>(in, heads, false));
      out_ = register_module("out", std::make_shared<nn::Linear>(in, out));
    }
    std::shared_ptr<nn::Linear> score, out_;
  };
  auto m = b.set_root(std::make_shared<Net>(io.in, io.classes));
  Tensor w = nn::softmax(m->score->forward(io.x), io.time);
  w.mark_as_output("weights");
  nn::reduce(w * io.x, "sum", {io.time}).mark_as_output("context");
  io.finish(m->out_->forward(io.x));
}

// A state initialized from a constant without the batch dim, whose next value
// reads only the state (no frame): h_t = tanh(W h_{t-1} + b), h_0 = 0.5.
void build_loop_constant_state(Builder& b) {
  Io io(b);
  struct Net : nn::Module {
    Dim hidden = Dim::feature("hidden", 4);
    Net(Dim in, Dim out) : Module("const_state") {
      rec = register_module("rec", std::make_shared<nn::Linear>(hidden, hidden));
      out_ = register_module("out", std::make_shared<nn::Linear>(in, out));
    }
    std::shared_ptr<nn::Linear> rec, out_;
  };
  auto m = b.set_root(std::make_shared<Net>(io.in, io.classes));
  nn::Loop loop(b, io.time);
  Tensor h = loop.state(nn::constant(b, 0.5, {m->hidden}), {Dim::batch(), m->hidden});
  Tensor h_new = nn::tanh(m->rec->forward(h));
  loop.next(h, h_new);
  loop.end();
  loop.stack(h_new).mark_as_output("rnn");
  io.finish(m->out_->forward(io.x));
}

// Accumulated attention weights: a loop over the decoder's time whose state
// lives over the encoder's time, initialized from a scalar 0.
void build_loop_encoder_state(Builder& b) {
  Io io(b);
  Dim dec_time = Dim::spatial("dec_time");
  Tensor dec = b.extern_data("dec", {Dim::batch(), dec_time, io.in});
  auto lin = b.set_root(std::make_shared<nn::Linear>(io.in, io.classes));
  nn::Loop loop(b, dec_time);
  Tensor acc = loop.state(nn::constant(b, 0.0), {Dim::batch(), io.time});
  Tensor q = loop.unstack(dec);
  // Attention that sees the weights accumulated so far (fertility-like).
  Tensor w = nn::softmax(nn::dot(io.x, q, {io.in}) - acc, io.time);
  Tensor acc_new = acc + w;
  // Reads the state but does not feed it (RETURNN would move it out of the loop).
  Tensor coverage = nn::reduce(nn::minimum(acc, w), "sum", {io.time});
  loop.next(acc, acc_new);
  loop.end();
  loop.stack(acc_new).mark_as_output("acc");
  loop.stack(w).mark_as_output("weights");
  loop.stack(coverage).mark_as_output("coverage");
  io.finish(lin->forward(io.x));
}

// No params and no loss: only an output.
void build_forward_only(Builder& b) {
  Io io(b);
  (io.x * nn::constant(b, 2.0)).mark_as_output();
}

}  // namespace

std::vector<ModelDef> rq_test_models() {
  auto def = [](std::string name, void (*build)(Builder&)) {
    return ModelDef{std::move(name), "a model RETURNN once rejected", build, small_training()};
  };
  return {
      def("rq-outer-broadcast", build_outer_broadcast),
      def("rq-where-broadcast", build_where_broadcast),
      def("rq-attention-sum", build_attention_sum),
      def("rq-loop-constant-state", build_loop_constant_state),
      def("rq-loop-encoder-state", build_loop_encoder_state),
      def("rq-forward-only", build_forward_only),
      def("rq-shift-labels", build_shift_labels),
      def("rq-shift-embed-loop", build_shift_embed_loop),
      def("rq-gather-batch", build_gather_batch),
  };
}

}  // namespace retc::testing
