// conformer-ctc: a small Conformer with CTC on RETURNN's
// TaskNumberBaseConvertDataset: read a binary number digit by digit (each
// digit becomes a learned 16-dim feature vector), write it in hexadecimal.
// The frontend halves the frame rate; CTC aligns the ~4x shorter label
// sequence. conformer-12x512: the realistic size (12 blocks, 512 dims, 80
// input features, time subsampled by 4) for compile, check and benchmarks,
// with random features and labels (DummyGenericDataset).
#include "absl/strings/str_cat.h"
#include "compiler/nn/conformer.h"
#include "compiler/nn/parametrize.h"
#include "configs/bundled.h"

namespace retc::configs {
namespace {

using ir::Dim;

class ConformerCtc : public nn::Module {
 public:
  ConformerCtc(std::optional<Dim> vocab, Dim features, Dim model, Dim ff, Dim labels,
               const nn::ConformerOptions& opts)
      : Module("conformer_ctc") {
    if (vocab) embed = register_module("embed", std::make_shared<nn::Embedding>(*vocab, features));
    encoder = register_module("encoder",
                              std::make_shared<nn::ConformerEncoder>(features, model, ff, opts));
    out = register_module("out",
                          std::make_shared<nn::Linear>(model, labels + Dim::feature("blank", 1)));
  }
  /// Logits over classes + blank, along encoder->out_axis(time).
  nn::Tensor forward(const nn::Tensor& x, const Dim& time) const {
    return call(x, std::source_location::current(), [&](const nn::Tensor& in) {
      return out->forward(encoder->forward(embed ? embed->forward(in) : in, time));
    });
  }
  std::shared_ptr<nn::Embedding> embed;
  std::shared_ptr<nn::ConformerEncoder> encoder;
  std::shared_ptr<nn::Linear> out;
};

/// The sizes options set (conformer-ctc and conformer-12x512).
struct ConformerSizes {
  int64_t blocks, model, ff, heads, kernel;
  double dropout;
  bool gradient_checkpoint = false;
};

std::vector<ModelOption> conformer_options(const ConformerSizes& s) {
  return {int_option("blocks", s.blocks, "conformer blocks", 1),
          int_option("model_dim", s.model, "model dimension", 1),
          int_option("ff_dim", s.ff, "feed-forward dimension", 1),
          int_option("heads", s.heads, "self-attention heads (they divide model_dim)", 1),
          int_option("conv_kernel", s.kernel, "the convolution module's kernel size", 1),
          float_option("dropout", s.dropout, "dropout in each block", 0.0, 1.0),
          bool_option("gradient_checkpoint", s.gradient_checkpoint,
                      "recompute each block's activations in backward (less memory; torch)")};
}

ConformerSizes conformer_sizes(const OptionValues& o) {
  return {o.get_int("blocks"),
          o.get_int("model_dim"),
          o.get_int("ff_dim"),
          o.get_int("heads"),
          o.get_int("conv_kernel"),
          o.get_float("dropout"),
          o.get_bool("gradient_checkpoint")};
}

void build_small(nn::Builder& b, const ConformerSizes& s) {
  const Dim time = Dim::spatial("time"), label_time = Dim::spatial("label_time");
  const Dim digits = Dim::feature("digits", 2), hex = Dim::feature("hex", 16);
  nn::Tensor x = b.extern_data("data", {Dim::batch(), time}, ir::DType::kInt32, digits);
  nn::Tensor y = b.extern_data("classes", {Dim::batch(), label_time}, ir::DType::kInt32, hex);
  const auto opts = number_task_encoder(s.blocks, s.heads, s.kernel, s.dropout)
                        .gradient_checkpoint(s.gradient_checkpoint);
  auto model = b.set_root(std::make_shared<ConformerCtc>(digits, Dim::feature("features", 16),
                                                         Dim::feature("model", s.model),
                                                         Dim::feature("ff", s.ff), hex, opts));
  nn::Tensor logits = model->forward(x, time);
  logits.mark_as_output();
  const Dim enc_time = model->encoder->out_axis(time);
  nn::ctc_loss(logits, y, enc_time).mark_as_loss("ctc");
  // What `retc search` decodes: the greedy CTC decoding.
  nn::ctc_greedy_decode(logits, enc_time, Dim::spatial("hyp_time")).mark_as_search_output();
}

void build_large(nn::Builder& b, const ConformerSizes& s, bool weight_norm,
                 bool dropout_broadcast) {
  const Dim time = Dim::spatial("time"), label_time = Dim::spatial("label_time");
  const Dim features = Dim::feature("features", 80), labels = Dim::feature("labels", 1000);
  nn::Tensor x = b.extern_data("data", {Dim::batch(), time, features});
  nn::Tensor y = b.extern_data("classes", {Dim::batch(), label_time}, ir::DType::kInt32, labels);
  const auto opts = nn::ConformerOptions()
                        .num_layers(s.blocks)
                        .num_heads(s.heads)
                        .conv_kernel(s.kernel)
                        .dropout(s.dropout)
                        .dropout_broadcast(dropout_broadcast)
                        .time_stride(4)
                        .gradient_checkpoint(s.gradient_checkpoint);
  auto model =
      std::make_shared<ConformerCtc>(std::nullopt, features, Dim::feature("model", s.model),
                                     Dim::feature("ff", s.ff), labels, opts);
  if (weight_norm) {
    // Every Linear's weight: w = g * v / ||v|| (per output unit).
    model->apply([](nn::Module& m) {
      if (m.type_name() == "linear") nn::weight_norm(m, "weight");
    });
  }
  b.set_root(model);
  nn::Tensor logits = model->forward(x, time);
  logits.mark_as_output();
  nn::ctc_loss(logits, y, model->encoder->out_axis(time)).mark_as_loss("ctc");
}

emit::PyValue random_features(int64_t num_seqs) {
  return emit::PyValue::dict(
      {{"class", "DummyGenericDataset"},
       {"data_template", emit::PyValue::ref("extern_data")},
       {"num_seqs", num_seqs},
       {"seq_lens", emit::PyValue::dict({{"data", emit::PyValue::tuple({200, 400})},
                                         {"classes", emit::PyValue::tuple({10, 30})}})}});
}

}  // namespace

nn::ConformerOptions number_task_encoder(int64_t blocks, int64_t heads, int64_t kernel,
                                         double dropout) {
  return nn::ConformerOptions()
      .num_layers(blocks)
      .num_heads(heads)
      .conv_kernel(kernel)
      .rel_pos_clipping(8)
      .dropout(dropout)
      .frontend_channels1(8)
      .frontend_channels2(16)
      .time_stride(2);
}

emit::TrainingSetup number_task_setup() {
  emit::TrainingSetup t;
  t.dev = number_task(200, true);
  t.batch_size = 2000;
  t.max_seqs = 40;
  t.learning_rate = 0.001;
  t.num_epochs = 10;
  return t;
}

emit::PyValue number_task(int64_t num_seqs, bool fixed) {
  emit::PyValue d = emit::PyValue::dict({{"class", "TaskNumberBaseConvertDataset"},
                                         {"input_base", 2},
                                         {"output_base", 16},
                                         {"min_input_seq_len", 8},
                                         {"max_input_seq_len", 32},
                                         {"num_seqs", num_seqs}});
  if (fixed) d.set("fixed_random_seed", 1);
  return d;
}

ModelDef model_conformer_ctc() {
  ModelDef def;
  def.name = "conformer-ctc";
  def.description = "small Conformer with CTC: binary numbers to hexadecimal digits";
  emit::TrainingSetup& t = def.training;
  t = number_task_setup();
  def.options = conformer_options({2, 64, 128, 4, 7, 0.1});
  def.options.push_back(int_option("train_seqs", 2000, "training sequences per epoch", 1));
  for (ModelOption& o : training_options(t)) def.options.push_back(std::move(o));
  def.configure = [](ModelDef& d, const OptionValues& o) {
    d.build = [s = conformer_sizes(o)](nn::Builder& b) { build_small(b, s); };
    d.training.train = number_task(o.get_int("train_seqs"), false);
    apply_training_options(o, d.training);
  };
  return configured(std::move(def));
}

ModelDef model_conformer_ctc_grow() {
  ModelDef def = model_conformer_ctc();
  def.name = "conformer-ctc-grow";
  def.description = "conformer-ctc grown by pretraining: 2 blocks in epochs 1-2, 4 from epoch 3";
  // Stage 1 (from epoch 3) adds blocks 2 and 3; blocks 0 and 1 go on from
  // their trained values (params are named by module path).
  def.training.num_epochs = 5;
  def.options = conformer_options({4, 64, 128, 4, 7, 0.1});
  def.options.insert(def.options.begin() + 1,
                     {int_option("first_blocks", 2, "blocks in the first stage", 1),
                      int_option("grow_epoch", 3, "the first epoch with all blocks", 2)});
  def.options.push_back(int_option("train_seqs", 1000, "training sequences per epoch", 1));
  for (ModelOption& o : training_options(def.training)) def.options.push_back(std::move(o));
  def.configure = [](ModelDef& d, const OptionValues& o) {
    d.build = [s = conformer_sizes(o), first = o.get_int("first_blocks")](nn::Builder& b) {
      ConformerSizes stage = s;
      if (b.stage() == 0) stage.blocks = first;
      build_small(b, stage);
    };
    d.stage_epochs = {o.get_int("grow_epoch")};
    d.training.train = number_task(o.get_int("train_seqs"), false);
    apply_training_options(o, d.training);
  };
  return configured(std::move(def));
}

ModelDef conformer_ctc_model(int64_t blocks, bool weight_norm, bool dropout_broadcast) {
  ModelDef def;
  def.name = absl::StrCat("conformer-", blocks, "x512", weight_norm ? "-wn" : "",
                          dropout_broadcast ? "-bcast" : "");
  def.description = absl::StrCat("Conformer CTC encoder, ", blocks,
                                 " blocks, 512 dims, 80 features (random data)",
                                 weight_norm ? ", weight norm on every Linear" : "");
  emit::TrainingSetup& t = def.training;
  t.dev = random_features(10);
  t.batch_size = 10000;
  t.max_seqs = 20;
  t.learning_rate = 0.0005;
  t.num_epochs = 1;
  def.options = conformer_options({blocks, 512, 2048, 8, 31, 0.1});
  def.options.push_back(bool_option("weight_norm", weight_norm, "weight norm on every Linear"));
  def.options.push_back(bool_option("dropout_broadcast", dropout_broadcast,
                                    "dropout masks shared over batch and time"));
  def.options.push_back(int_option("train_seqs", 100, "training sequences per epoch", 1));
  for (ModelOption& o : training_options(t)) def.options.push_back(std::move(o));
  def.configure = [](ModelDef& d, const OptionValues& o) {
    d.build = [s = conformer_sizes(o), wn = o.get_bool("weight_norm"),
               bcast = o.get_bool("dropout_broadcast")](nn::Builder& b) {
      build_large(b, s, wn, bcast);
    };
    d.training.train = random_features(o.get_int("train_seqs"));
    apply_training_options(o, d.training);
  };
  return configured(std::move(def));
}

ModelDef model_conformer_large() { return conformer_ctc_model(12, false, false); }

}  // namespace retc::configs
