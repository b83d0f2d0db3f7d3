// swb-conformer-hybrid-2021: the published Switchboard Conformer hybrid
// baseline (rwth-i6/returnn-experiments, 2021-swb-conformer-hybrid/
// baseline_12l.config; Zeineldeen et al., "Conformer-based Hybrid ASR System
// for Switchboard Dataset", 2022), written with retc's modules: a VGG
// frontend that subsamples time by 3, 12 Conformer blocks with relative
// positions (RETURNN's key_shift, clipping 16), attention dropout and an
// output projection without bias, each block's output plus the frontend's
// (a long skip), a transposed convolution back to the alignment's frame
// rate whose length the alignment gives (RETURNN's reinterpret_data with
// size_base), and frame-wise cross-entropy with focal loss on 9001 tied
// triphone states, with auxiliary losses after blocks 4 and 8 through the
// same transposed convolution. SpecAugment on the 40 features.
//
// Trained here on random features and labels of the published dims
// (`retc train swb-conformer-hybrid-2021` runs one short epoch on CPU);
// the published setup reads Switchboard through RASR.
#include "absl/strings/str_cat.h"
#include "compiler/nn/audio.h"
#include "compiler/nn/conformer.h"
#include "configs/bundled.h"

namespace retc::configs {
namespace {

using ir::Dim;

/// RETURNN's VarianceScaling(scale=0.78, mode=fan_in, uniform), the
/// published setup's forward_weights_init.
ir::Initializer published_init() {
  return ir::Initializer::variance_scaling(0.78, ir::FanMode::kFanIn, ir::Distribution::kUniform);
}

/// The VGG frontend: features as a spatial axis with one channel; 3x3
/// convs (32) -> max pool 1x2 over features -> (64) -> (64) -> (32, time
/// stride 3), each followed by swish; features and channels merged, then a
/// Linear without bias to the model dim.
class VggFrontend : public nn::Module {
 public:
  VggFrontend(Dim features, Dim model)
      : Module("vgg_frontend"),
        features_(features),
        feat_(Dim::spatial("feat", *features.size())),
        chan0_(Dim::feature("chan0", 1)),
        pooled_(Dim::spatial("feat_pooled", *features.size() / 2)),
        merged_(Dim::feature("vgg_merged", *features.size() / 2 * 32)) {
    const Dim c32 = Dim::feature("vgg32", 32), c64 = Dim::feature("vgg64", 64);
    conv1 = register_module("conv1",
                            std::make_shared<nn::Conv2d>(nn::Conv2dOptions(chan0_, c32, {3, 3})));
    conv2 =
        register_module("conv2", std::make_shared<nn::Conv2d>(nn::Conv2dOptions(c32, c64, {3, 3})));
    conv3 =
        register_module("conv3", std::make_shared<nn::Conv2d>(nn::Conv2dOptions(c64, c64, {3, 3})));
    conv4 = register_module(
        "conv4", std::make_shared<nn::Conv2d>(nn::Conv2dOptions(c64, c32, {3, 3}).stride({3, 1})));
    linear = register_module("linear", std::make_shared<nn::Linear>(merged_, model, false));
  }
  Dim out_axis(const Dim& time) const { return conv4->out_axis(time, 0); }
  const Dim& in_dim() const { return features_; }
  nn::Tensor forward(const nn::Tensor& x, const Dim& time) const {
    return call(x, std::source_location::current(), [&](const nn::Tensor& in) {
      nn::Tensor h = nn::split_dims(in, features_, {feat_, chan0_});
      h = nn::swish(conv1->forward(h, time, feat_));
      h = nn::pool(h, "max", {time, feat_}, {1, 2}, {1, 2}, "same", {time, pooled_});
      h = nn::swish(conv2->forward(h, time, pooled_));
      h = nn::swish(conv3->forward(h, time, pooled_));
      h = nn::swish(conv4->forward(h, time, pooled_));
      return linear->forward(nn::merge_dims(h, {pooled_, conv4->out_dim()}, merged_));
    });
  }
  std::shared_ptr<nn::Conv2d> conv1, conv2, conv3, conv4;
  std::shared_ptr<nn::Linear> linear;

 private:
  Dim features_, feat_, chan0_, pooled_, merged_;
};

class SwbConformerHybrid : public nn::Module {
 public:
  SwbConformerHybrid(Dim features, Dim model, Dim ff, Dim classes, int64_t num_blocks,
                     int64_t heads)
      : Module("swb_conformer_hybrid"), model_(model) {
    const auto opts = nn::ConformerOptions()
                          .num_heads(heads)
                          .conv_kernel(8)
                          .rel_pos_clipping(16)
                          .dropout(0.1)
                          .dropout_broadcast(true)
                          .att_dropout(0.1)
                          .att_proj_bias(false)
                          // The published batch norm's epsilon and momentum: RETURNN's
                          // defaults before behavior version 12 (the file has none); the
                          // epsilon measured against RETURNN's build of it (#27).
                          .conv_norm_epsilon(1e-3)
                          .conv_norm_momentum(0.99);
    frontend = register_module("frontend", std::make_shared<VggFrontend>(features, model));
    blocks = register_module("blocks", std::make_shared<nn::ModuleList>());
    for (int64_t i = 0; i < num_blocks; ++i)
      blocks->append(std::make_shared<nn::ConformerBlock>(model, ff, opts));
    // One transposed convolution, used for the output and both auxiliary
    // losses (RETURNN's reuse_params), with L2 on its params.
    upsample =
        register_module("upsample", std::make_shared<nn::TransposedConv1d>(
                                        nn::TransposedConv1dOptions(model, model, 3).stride(3)));
    upsample->weight().set_weight_decay(0.01, nn::WeightDecayMode::kCoupled);
    upsample->bias().set_weight_decay(0.01, nn::WeightDecayMode::kCoupled);
    out = register_module("out", std::make_shared<nn::Linear>(model, classes));
    for (int i : {4, 8}) {
      aux_mlp.push_back(register_module(absl::StrCat("aux", i, "_mlp"),
                                        std::make_shared<nn::Linear>(model, model)));
      aux_out.push_back(register_module(absl::StrCat("aux", i, "_out"),
                                        std::make_shared<nn::Linear>(model, classes)));
    }
    // The published init on every Linear-like weight (RETURNN's conv layers
    // keep their default, Glorot uniform).
    apply_params({ir::ParamKind::kWeight, "blocks"},
                 [](const std::string&, nn::ParamSetter& p) { p.set_initial(published_init()); });
    for (size_t i = 0; i < blocks->size(); ++i) {
      blocks->at<nn::ConformerBlock>(i)->conv->depthwise_conv->weight().set_initial(
          ir::Initializer::glorot_uniform());
    }
    for (nn::Linear* l : {frontend->linear.get(), out.get(), aux_mlp[0].get(), aux_mlp[1].get(),
                          aux_out[0].get(), aux_out[1].get()})
      l->weight().set_initial(published_init());
  }

  /// At the alignment's frame rate (`align_time`, from `align`): the frame
  /// logits of the output and of the two auxiliary losses.
  std::vector<nn::Tensor> forward(const nn::Tensor& features, const Dim& time,
                                  const nn::Tensor& align, const Dim& align_time) const {
    std::vector<nn::Tensor> logits;
    call(features, std::source_location::current(), [&](const nn::Tensor& x) {
      const Dim sub = frontend->out_axis(time);
      auto upsampled = [&](const nn::Tensor& h) {
        nn::Tensor y = nn::swish(upsample->forward(nn::dropout(h, 0.1, {model_}), sub));
        return nn::replace_dim(y, upsample->out_axis(sub), align, align_time);
      };
      nn::Tensor skip = frontend->forward(nn::specaugment(x, time, frontend->in_dim()), time);
      nn::Tensor h = nn::dropout(skip, 0.1, {model_});
      for (size_t i = 0; i < blocks->size(); ++i) {
        h = skip + blocks->at<nn::ConformerBlock>(i)->forward(h, sub);
        if (i == 3 || i == 7) {
          const size_t k = i == 3 ? 0 : 1;
          logits.push_back(aux_out[k]->forward(aux_mlp[k]->forward(upsampled(h))));
        }
      }
      logits.insert(logits.begin(), out->forward(upsampled(h)));
      return logits.front();
    });
    return logits;
  }

  std::shared_ptr<VggFrontend> frontend;
  std::shared_ptr<nn::ModuleList> blocks;
  std::shared_ptr<nn::TransposedConv1d> upsample;
  std::shared_ptr<nn::Linear> out;
  std::vector<std::shared_ptr<nn::Linear>> aux_mlp, aux_out;

 private:
  Dim model_;
};

void build_swb_conformer_hybrid(nn::Builder& b, int64_t blocks, int64_t model, int64_t ff,
                                int64_t heads) {
  const Dim time = Dim::spatial("time"), align_time = Dim::spatial("align_time");
  const Dim features = Dim::feature("features", 40), classes = Dim::feature("classes", 9001);
  nn::Tensor x = b.extern_data("data", {Dim::batch(), time, features});
  nn::Tensor y = b.extern_data("classes", {Dim::batch(), align_time}, ir::DType::kInt32, classes);
  auto net = b.set_root(std::make_shared<SwbConformerHybrid>(
      features, Dim::feature("model", model), Dim::feature("ff", ff), classes, blocks, heads));
  std::vector<nn::Tensor> logits = net->forward(x, time, y, align_time);
  logits[0].mark_as_output();
  nn::LossOptions ce;
  ce.focal_loss_factor = 2.0;
  nn::softmax_cross_entropy(logits[0], y, ce).mark_as_loss("ce");
  ce.scale = 0.3;
  nn::softmax_cross_entropy(logits[1], y, ce).mark_as_loss("aux4_ce");
  nn::softmax_cross_entropy(logits[2], y, ce).mark_as_loss("aux8_ce");
}

/// Random features and labels of the published dims, one length for both
/// (frame-aligned): 301 frames, so the transposed convolution's 303 frames
/// are cut to the alignment's.
emit::PyValue random_aligned(int64_t num_seqs) {
  return emit::PyValue::dict({{"class", "DummyGenericDataset"},
                              {"data_template", emit::PyValue::ref("extern_data")},
                              {"num_seqs", num_seqs},
                              {"seq_lens", 301}});
}

}  // namespace

ModelDef model_swb_conformer_hybrid() {
  ModelDef def;
  def.name = "swb-conformer-hybrid-2021";
  def.description =
      "published Switchboard Conformer hybrid (12 blocks, 512 dims, 9001 states; random data)";
  emit::TrainingSetup& t = def.training;
  t.dev = random_aligned(2);
  t.batch_size = 1000;
  t.max_seqs = 3;
  // The published setup trains with Nadam; RETURNN's TF Nadam needs TF 1's
  // training_ops, gone from the pinned TensorFlow: Adam on both targets.
  t.optimizer = emit::PyValue::dict({{"class", "adam"}, {"epsilon", 1e-8}});
  t.learning_rate = 0.018;
  t.num_epochs = 1;
  def.options = {
      int_option("blocks", 12, "conformer blocks (auxiliary losses after blocks 4 and 8)", 8),
      int_option("model_dim", 512, "model dimension", 1),
      int_option("ff_dim", 2048, "feed-forward dimension", 1),
      int_option("heads", 8, "self-attention heads (they divide model_dim)", 1),
      warmup_option(10, "0.0002"),
      // One step (max_seqs): the tests train one epoch.
      int_option("train_seqs", 3, "training sequences per epoch (random data)", 1)};
  for (ModelOption& o : training_options(t)) def.options.push_back(std::move(o));
  def.configure = [](ModelDef& d, const OptionValues& o) {
    d.build = [blocks = o.get_int("blocks"), model = o.get_int("model_dim"),
               ff = o.get_int("ff_dim"), heads = o.get_int("heads")](nn::Builder& b) {
      build_swb_conformer_hybrid(b, blocks, model, ff, heads);
    };
    d.training.train = random_aligned(o.get_int("train_seqs"));
    apply_training_options(o, d.training);
    apply_warmup(o, 0.0002, d.training);
  };
  return configured(std::move(def));
}

}  // namespace retc::configs
