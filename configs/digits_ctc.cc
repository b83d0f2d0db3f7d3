// digits-ctc: speech recognition of spoken digit strings. A small Conformer
// with SpecAugment and CTC on 40 log-mel features, which RETURNN's
// OggZipDataset extracts from the audio (ExtractAudioFeatures, per-sequence
// mean and variance normalization), or, with `--set features=raw`, which the
// model computes from the waveform itself (nn::log_mel_filterbank_from_raw:
// rf's features, the same normalization in the model). The corpus (tools/make_digits.py:
// espeak-ng voices; the dev voices are held out from training) lives outside
// the repo, in digits_corpus_dir(); tools/setup.sh makes it.
#include <cstdlib>

#include "compiler/nn/audio.h"
#include "compiler/nn/conformer.h"
#include "configs/bundled.h"

namespace retc::configs {
namespace {

using ir::Dim;

class DigitsCtc : public nn::Module {
 public:
  DigitsCtc(Dim features, Dim model, Dim ff, Dim labels, const nn::ConformerOptions& opts)
      : Module("digits_ctc") {
    encoder = register_module("encoder",
                              std::make_shared<nn::ConformerEncoder>(features, model, ff, opts));
    out = register_module("out",
                          std::make_shared<nn::Linear>(model, labels + Dim::feature("blank", 1)));
  }
  std::shared_ptr<nn::ConformerEncoder> encoder;
  std::shared_ptr<nn::Linear> out;
};

struct DigitsSizes {
  int64_t blocks, model, ff, heads, kernel;
  double dropout;
  bool raw_audio;
};

// Each sequence's features minus their mean over its frames, divided by their
// standard deviation (ExtractAudioFeatures' per_seq normalization).
nn::Tensor normalize_per_sequence(const nn::Tensor& x, const Dim& time) {
  nn::Tensor centered = x - nn::reduce(x, "mean", {time});
  nn::Tensor var = nn::reduce(centered * centered, "mean", {time});
  return centered * nn::activation(var + nn::constant(x.builder(), 1e-5), "rsqrt");
}

void build_digits_ctc(nn::Builder& b, const DigitsSizes& s) {
  const Dim label_time = Dim::spatial("label_time");
  const Dim features = Dim::feature("log_mel", 40), digits = Dim::feature("digits", 10);
  Dim time = Dim::spatial("time");
  nn::Tensor x;
  if (s.raw_audio) {
    const Dim samples = Dim::spatial("samples");
    nn::LogMel f = nn::log_mel_filterbank_from_raw(
        b.extern_data("data", {Dim::batch(), samples, Dim::feature("raw", 1)}), samples, features);
    time = f.frames;
    x = normalize_per_sequence(f.features, time);
  } else {
    x = b.extern_data("data", {Dim::batch(), time, features});
  }
  nn::Tensor y = b.extern_data("classes", {Dim::batch(), label_time}, ir::DType::kInt32, digits);
  const auto opts = nn::ConformerOptions()
                        .num_layers(s.blocks)
                        .num_heads(s.heads)
                        .conv_kernel(s.kernel)
                        .rel_pos_clipping(16)
                        .dropout(s.dropout)
                        .frontend_channels1(8)
                        .frontend_channels2(16)
                        .time_stride(4);
  auto model = b.set_root(std::make_shared<DigitsCtc>(features, Dim::feature("model", s.model),
                                                      Dim::feature("ff", s.ff), digits, opts));
  // A digit lasts 25 to 50 frames: time masks of at most 8 frames leave it audible.
  nn::SpecAugmentOptions aug;
  aug.max_time_mask_width = 8;
  aug.steps = {0, 500, 1000};
  nn::Tensor logits =
      model->out->forward(model->encoder->forward(nn::specaugment(x, time, features, aug), time));
  logits.mark_as_output();
  const Dim enc_time = model->encoder->out_axis(time);
  nn::ctc_loss(logits, y, enc_time).mark_as_loss("ctc");
  nn::ctc_greedy_decode(logits, enc_time, Dim::spatial("hyp_time")).mark_as_search_output();
}

emit::PyValue ogg_zip(const std::string& dir, const std::string& part, bool train, bool raw_audio) {
  emit::PyValue d =
      emit::PyValue::dict({{"class", "OggZipDataset"}, {"path", dir + "/" + part + ".zip"}});
  // Raw: the samples, peak-normalized, as [time, 1] (16 kHz: the corpus's rate, checked).
  d.set("audio", raw_audio ? emit::PyValue::dict({{"features", "raw"}, {"sample_rate", 16000}})
                           : emit::PyValue::dict({{"features", "log_mel_filterbank"},
                                                  {"num_feature_filters", 40},
                                                  {"window_len", 0.025},
                                                  {"step_len", 0.01},
                                                  {"norm_mean", "per_seq"},
                                                  {"norm_std_dev", "per_seq"}}));
  d.set("targets", emit::PyValue::dict({{"class", "Vocabulary"},
                                        {"vocab_file", dir + "/digits.vocab"},
                                        {"unknown_label", emit::PyValue::none()}}));
  d.set("seq_ordering", train ? "laplace:.100" : "sorted_reverse");
  return d;
}

}  // namespace

std::string digits_corpus_dir() {
  if (const char* d = std::getenv("RETC_CORPUS_DIR"); d && *d) return std::string(d) + "/digits";
  if (const char* c = std::getenv("XDG_CACHE_HOME"); c && *c)
    return std::string(c) + "/retc/corpora/digits";
  const char* home = std::getenv("HOME");
  return std::string(home ? home : ".") + "/.cache/retc/corpora/digits";
}

ModelDef model_digits_ctc() {
  ModelDef def;
  def.name = "digits-ctc";
  def.description = "speech: a Conformer with SpecAugment and CTC on spoken digit strings";
  const std::string dir = digits_corpus_dir();
  emit::TrainingSetup& t = def.training;
  t.train = ogg_zip(dir, "train", true, false);
  // A curriculum: the first epoch trains on the shorter utterances (a mean
  // of at most 0.8 s; the corpus's mean is about 1.4 s).
  t.train.set("epoch_wise_filter", emit::epoch_wise_filter({{1, 1, 80.0}}));
  t.dev = ogg_zip(dir, "dev", false, false);
  t.batch_size = 8000;  // frames (features=raw: times 160 samples)
  t.max_seqs = 40;
  t.learning_rate = 0.002;
  t.gradient_clip_global_norm = 5.0;
  t.num_epochs = 5;
  def.options = {int_option("blocks", 3, "conformer blocks", 1),
                 int_option("model_dim", 96, "model dimension", 1),
                 int_option("ff_dim", 192, "feed-forward dimension", 1),
                 int_option("heads", 4, "self-attention heads (they divide model_dim)", 1),
                 int_option("conv_kernel", 15, "the convolution module's kernel size", 1),
                 float_option("dropout", 0.1, "dropout in each block", 0.0, 1.0),
                 enum_option("features", "dataset", {"dataset", "raw"},
                             "log-mel features from the dataset, or computed in the model "
                             "from the raw audio"),
                 warmup_option(2, "learning_rate / 4")};
  for (ModelOption& o : training_options(t)) def.options.push_back(std::move(o));
  def.configure = [](ModelDef& d, const OptionValues& o) {
    const bool raw = o.get_string("features") == "raw";
    const DigitsSizes s{o.get_int("blocks"),
                        o.get_int("model_dim"),
                        o.get_int("ff_dim"),
                        o.get_int("heads"),
                        o.get_int("conv_kernel"),
                        o.get_float("dropout"),
                        raw};
    d.build = [s](nn::Builder& b) { build_digits_ctc(b, s); };
    apply_training_options(o, d.training);
    if (raw) {
      // The same batches in samples (batch_size counts 10 ms frames: 160
      // samples each), the same curriculum (it reads the corpus's durations).
      const std::string dir = digits_corpus_dir();
      d.training.train.set("audio", *ogg_zip(dir, "train", true, true).get("audio"));
      d.training.dev.set("audio", *ogg_zip(dir, "dev", false, true).get("audio"));
      d.training.batch_size *= 160;
    }
    apply_warmup(o, d.training.learning_rate / 4, d.training);
  };
  def.data_files = {dir + "/train.zip", dir + "/dev.zip", dir + "/digits.vocab"};
  def.how_to_make =
      "make the digits corpus with tools/setup.sh (or: python tools/make_digits.py " + dir + ")";
  return configured(std::move(def));
}

}  // namespace retc::configs
