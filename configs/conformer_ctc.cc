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

void build_small(nn::Builder& b, int64_t layers) {
  const Dim time = Dim::spatial("time"), label_time = Dim::spatial("label_time");
  const Dim digits = Dim::feature("digits", 2), hex = Dim::feature("hex", 16);
  nn::Tensor x = b.extern_data("data", {Dim::batch(), time}, ir::DType::kInt32, digits);
  nn::Tensor y = b.extern_data("classes", {Dim::batch(), label_time}, ir::DType::kInt32, hex);
  const auto opts = nn::ConformerOptions()
                        .num_layers(layers)
                        .num_heads(4)
                        .conv_kernel(7)
                        .rel_pos_clipping(8)
                        .dropout(0.1)
                        .frontend_channels1(8)
                        .frontend_channels2(16)
                        .time_stride(2);
  auto model = b.set_root(std::make_shared<ConformerCtc>(digits, Dim::feature("features", 16),
                                                         Dim::feature("model", 64),
                                                         Dim::feature("ff", 128), hex, opts));
  nn::Tensor logits = model->forward(x, time);
  logits.mark_as_output();
  const Dim enc_time = model->encoder->out_axis(time);
  nn::ctc_loss(logits, y, enc_time).mark_as_loss("ctc");
  // What `retc search` decodes: the greedy CTC decoding.
  nn::ctc_greedy_decode(logits, enc_time, Dim::spatial("hyp_time")).mark_as_search_output();
}

void build_large(nn::Builder& b, int64_t blocks, bool weight_norm, bool dropout_broadcast) {
  const Dim time = Dim::spatial("time"), label_time = Dim::spatial("label_time");
  const Dim features = Dim::feature("features", 80), labels = Dim::feature("labels", 1000);
  nn::Tensor x = b.extern_data("data", {Dim::batch(), time, features});
  nn::Tensor y = b.extern_data("classes", {Dim::batch(), label_time}, ir::DType::kInt32, labels);
  const auto opts = nn::ConformerOptions()
                        .num_layers(blocks)
                        .num_heads(8)
                        .conv_kernel(31)
                        .dropout_broadcast(dropout_broadcast)
                        .time_stride(4);
  auto model = std::make_shared<ConformerCtc>(std::nullopt, features, Dim::feature("model", 512),
                                              Dim::feature("ff", 2048), labels, opts);
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

emit::PyValue random_features(int64_t num_seqs) {
  return emit::PyValue::dict(
      {{"class", "DummyGenericDataset"},
       {"data_template", emit::PyValue::ref("extern_data")},
       {"num_seqs", num_seqs},
       {"seq_lens", emit::PyValue::dict({{"data", emit::PyValue::tuple({200, 400})},
                                         {"classes", emit::PyValue::tuple({10, 30})}})}});
}

}  // namespace

ModelDef model_conformer_ctc() {
  ModelDef def;
  def.name = "conformer-ctc";
  def.description = "small Conformer with CTC: binary numbers to hexadecimal digits";
  def.build = [](nn::Builder& b) { build_small(b, 2); };
  emit::TrainingSetup& t = def.training;
  t.train = number_task(2000, false);
  t.dev = number_task(200, true);
  t.batch_size = 2000;
  t.max_seqs = 40;
  t.learning_rate = 0.001;
  t.num_epochs = 10;
  return def;
}

ModelDef model_conformer_ctc_grow() {
  ModelDef def = model_conformer_ctc();
  def.name = "conformer-ctc-grow";
  def.description = "conformer-ctc grown by pretraining: 2 blocks in epochs 1-2, 4 from epoch 3";
  // Stage 1 (from epoch 3) adds blocks 2 and 3; blocks 0 and 1 go on from
  // their trained values (params are named by module path).
  def.stage_epochs = {3};
  def.build = [](nn::Builder& b) { build_small(b, b.stage() == 0 ? 2 : 4); };
  def.training.train = number_task(1000, false);
  def.training.num_epochs = 5;
  return def;
}

ModelDef conformer_ctc_model(int64_t blocks, bool weight_norm, bool dropout_broadcast) {
  ModelDef def;
  def.name = absl::StrCat("conformer-", blocks, "x512", weight_norm ? "-wn" : "",
                          dropout_broadcast ? "-bcast" : "");
  def.description = absl::StrCat("Conformer CTC encoder, ", blocks,
                                 " blocks, 512 dims, 80 features (random data)",
                                 weight_norm ? ", weight norm on every Linear" : "");
  def.build = [blocks, weight_norm, dropout_broadcast](nn::Builder& b) {
    build_large(b, blocks, weight_norm, dropout_broadcast);
  };
  emit::TrainingSetup& t = def.training;
  t.train = random_features(100);
  t.dev = random_features(10);
  t.batch_size = 10000;
  t.max_seqs = 20;
  t.learning_rate = 0.0005;
  t.num_epochs = 1;
  return def;
}

ModelDef model_conformer_large() { return conformer_ctc_model(12, false, false); }

}  // namespace retc::configs
