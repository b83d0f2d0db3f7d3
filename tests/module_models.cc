// Test models for the module library and functional ops; the integration
// test tests/integration/test_modules.py checks each in RETURNN: variable
// names and shapes equal the IR's, and the param count equals a formula.
#include "compiler/nn/modules.h"
#include "tests/tagging_io.h"
#include "tests/test_models.h"

namespace retc::testing {
namespace {

using ir::Dim;
using nn::Builder;
using nn::Tensor;

using Io = TaggingIo;

template <class Norm>
class Normed : public nn::Module {
 public:
  Normed(Dim in, Dim out) : Module("normed") {
    norm = register_module("norm", std::make_shared<Norm>(in));
    out_ = register_module("out", std::make_shared<nn::Linear>(in, out));
  }
  Tensor forward(const Tensor& x) const {
    return call(x, std::source_location::current(),
                [&](const Tensor& h) { return out_->forward(norm->forward(h)); });
  }
  std::shared_ptr<Norm> norm;
  std::shared_ptr<nn::Linear> out_;
};

template <class Norm>
void build_normed(Builder& b) {
  Io io(b);
  auto m = b.set_root(std::make_shared<Normed<Norm>>(io.in, io.classes));
  io.finish(m->forward(io.x));
}

class EmbedNet : public nn::Module {
 public:
  EmbedNet(Dim vocab, Dim dim, Dim out) : Module("embed_net") {
    embed = register_module("embed", std::make_shared<nn::Embedding>(vocab, dim));
    out_ = register_module("out", std::make_shared<nn::Linear>(dim, out));
  }
  std::shared_ptr<nn::Embedding> embed;
  std::shared_ptr<nn::Linear> out_;
};

void build_embedding(Builder& b) {
  Dim vocab = Dim::feature("vocab", 7);
  Io io(b, vocab);
  auto m = b.set_root(std::make_shared<EmbedNet>(vocab, Dim::feature("embed", 6), io.classes));
  io.finish(m->out_->forward(m->embed->forward(io.x)));
}

class BlstmNet : public nn::Module {
 public:
  BlstmNet(Dim in, Dim out) : Module("blstm_net") {
    blstm = register_module(
        "blstm", std::make_shared<nn::BLstm>(in, Dim::feature("fw", 4), Dim::feature("bw", 3)));
    out_ = register_module("out", std::make_shared<nn::Linear>(blstm->out_dim(), out));
  }
  std::shared_ptr<nn::BLstm> blstm;
  std::shared_ptr<nn::Linear> out_;
};

void build_blstm(Builder& b) {
  Io io(b);
  auto m = b.set_root(std::make_shared<BlstmNet>(io.in, io.classes));
  io.finish(m->out_->forward(m->blstm->forward(io.x, io.time)));
}

// reduce, softmax over time, log_softmax, normalize and concat in one net.
class OpsNet : public nn::Module {
 public:
  OpsNet(Dim in, Dim out) : Module("ops_net") {
    frame = register_module("frame", std::make_shared<nn::Linear>(in + in, out));
    pooled = register_module("pooled", std::make_shared<nn::Linear>(in, out));
  }
  std::shared_ptr<nn::Linear> frame, pooled;
};

void build_ops(Builder& b) {
  Io io(b);
  auto m = b.set_root(std::make_shared<OpsNet>(io.in, io.classes));
  Tensor weights = nn::softmax(io.x, io.time);                            // over time, masked
  Tensor summary = nn::reduce(nn::mul(io.x, weights), "sum", {io.time});  // [B, in]
  Tensor both = nn::concat(io.x, io.in, nn::normalize(io.x, {io.in}), io.in);
  Tensor logits = m->frame->forward(both) + m->pooled->forward(summary);
  nn::log_softmax(logits, io.classes).mark_as_output("log_probs");
  nn::reduce(logits, "max", {io.classes}).mark_as_output("max_logit");
  io.finish(logits);
}

// Self-attention (plain or causal) with key dim 8, value dim 6, 2 heads.
template <bool kCausal>
void build_attention(Builder& b) {
  Io io(b);
  struct Net : nn::Module {
    Net(Dim in, Dim out) : Module("att_net") {
      att = register_module(
          "att", std::make_shared<nn::SelfAttention>(in, Dim::feature("key", 8),
                                                     Dim::feature("value", 6), 2, kCausal));
      out_ = register_module("out", std::make_shared<nn::Linear>(in, out));
    }
    std::shared_ptr<nn::SelfAttention> att;
    std::shared_ptr<nn::Linear> out_;
  };
  auto m = b.set_root(std::make_shared<Net>(io.in, io.classes));
  nn::Tensor h = m->att->forward(io.x, io.time);
  h.mark_as_output("attended");
  io.finish(m->out_->forward(h));
}

// A 2-layer Transformer encoder (model dim 8, ff 16, 2 heads) tagger.
void build_transformer(Builder& b) {
  Io io(b);
  struct Net : nn::Module {
    Net(Dim in, Dim out) : Module("transformer_net") {
      Dim model = Dim::feature("model", 8);
      in_proj = register_module("in_proj", std::make_shared<nn::Linear>(in, model));
      encoder = register_module(
          "encoder", std::make_shared<nn::TransformerEncoder>(2, model, Dim::feature("ff", 16), 2));
      out_ = register_module("out", std::make_shared<nn::Linear>(model, out));
    }
    std::shared_ptr<nn::Linear> in_proj, out_;
    std::shared_ptr<nn::TransformerEncoder> encoder;
  };
  auto m = b.set_root(std::make_shared<Net>(io.in, io.classes));
  io.finish(m->out_->forward(m->encoder->forward(m->in_proj->forward(io.x), io.time)));
}

// Conv1d (kernel 3, dilation 2) straight to the class logits.
void build_conv(Builder& b) {
  Io io(b);
  auto conv = b.set_root(std::make_shared<nn::Conv1d>(io.in, io.classes, 3, 1, nn::ConvOptions{.dilation = 2}));
  nn::Tensor h = conv->forward(io.x, io.time);
  h.mark_as_output("conv_out");
  io.finish(h);
}

// Loss options: a tagger whose CE loss is plain, scaled by 0.5 or label
// smoothed (0.1), and a regression head with a mean squared error loss.
enum class LossVariant { kPlain, kScaled, kSmoothed, kMse };

template <LossVariant kVariant>
void build_loss(Builder& b) {
  Io io(b);
  auto lin = b.set_root(std::make_shared<nn::Linear>(io.in, io.classes));
  Tensor logits = lin->forward(io.x);
  logits.mark_as_output();
  if (kVariant == LossVariant::kMse) {
    Tensor target = b.extern_data("target", {Dim::batch(), io.time, io.classes});
    nn::mean_squared_error(logits, target).mark_as_loss("mse");
    return;
  }
  nn::LossOptions opts;
  if (kVariant == LossVariant::kScaled) opts.scale = 0.5;
  if (kVariant == LossVariant::kSmoothed) opts.label_smoothing = 0.1;
  nn::softmax_cross_entropy(logits, io.y, opts).mark_as_loss("ce");
}

}  // namespace

std::vector<ModelDef> module_test_models() {
  auto def = [](std::string name, void (*build)(Builder&)) {
    emit::TrainingSetup t;
    t.train = emit::PyValue::dict({{"class", "Task12AXDataset"}, {"num_seqs", 20}});
    t.dev = emit::PyValue::dict(
        {{"class", "Task12AXDataset"}, {"num_seqs", 5}, {"fixed_random_seed", 1}});
    return ModelDef{std::move(name), "module library test model", build, t};
  };
  return {
      def("mod-layer-norm", build_normed<nn::LayerNorm>),
      def("mod-rms-norm", build_normed<nn::RmsNorm>),
      def("mod-embedding", build_embedding),
      def("mod-blstm", build_blstm),
      def("op-functional", build_ops),
      def("mod-self-attention", build_attention<false>),
      def("mod-causal-attention", build_attention<true>),
      def("mod-transformer", build_transformer),
      def("mod-conv1d", build_conv),
      def("loss-plain", build_loss<LossVariant::kPlain>),
      def("loss-scaled", build_loss<LossVariant::kScaled>),
      def("loss-smoothed", build_loss<LossVariant::kSmoothed>),
      def("loss-mse", build_loss<LossVariant::kMse>),
  };
}

}  // namespace retc::testing
