// The bundled models, by name: a plain table, no self-registration.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/nn/conformer.h"
#include "compiler/nn/loop.h"
#include "emit/model.h"

namespace retc::configs {

/// lstm-lm's network (configs/lstm_lm.cc): symbols one-hot -> embed (a Linear
/// without bias) -> Lstm -> dropout -> out (a Linear to the symbols' logits).
/// Also a module of other models: a language model for shallow fusion, its
/// params loaded from lstm-lm's own checkpoint (`--preload lm=CKPT`).
class LstmLm : public nn::Module {
 public:
  LstmLm(ir::Dim vocab, ir::Dim embed, ir::Dim hidden, double dropout)
      : Module("lstm_lm"), vocab_(vocab), dropout_(dropout) {
    this->embed = register_module("embed", std::make_shared<nn::Linear>(vocab, embed, false));
    lstm = register_module("lstm", std::make_shared<nn::Lstm>(embed, hidden));
    out = register_module("out", std::make_shared<nn::Linear>(hidden, vocab));
  }
  /// The next symbol's logits at each frame of one-hot symbols `x` over `time`.
  nn::Tensor forward(const nn::Tensor& input, const ir::Dim& time) const {
    return call(input, std::source_location::current(), [&](const nn::Tensor& x) {
      return out->forward(nn::dropout(lstm->forward(embed->forward(x), time), dropout_));
    });
  }
  /// One frame of a loop: the next symbol's log-probs after the sparse symbol
  /// `prev` from the LSTM state `state` (updated), as forward computes them.
  nn::Tensor step(const nn::Tensor& prev, nn::LstmState& state) const {
    nn::Builder& b = prev.builder();
    const nn::Tensor x = nn::gather(b.param(embed->weight()), prev, vocab_);
    state = lstm->step(x, state);
    return nn::log_softmax(out->forward(state.h), vocab_);
  }
  std::shared_ptr<nn::Linear> embed, out;
  std::shared_ptr<nn::Lstm> lstm;

 private:
  ir::Dim vocab_;
  double dropout_;
};

/// The end of a copy-task decoder's loop (the task has no end symbol): after
/// as many frames as each sequence of `memory` has along `src_time`, at most
/// the longest's. Made before the loop's body (its frame count is a state);
/// end() ends the loop.
class EndAtSourceLength {
 public:
  EndAtSourceLength(nn::Loop& loop, const nn::Tensor& memory, const ir::Dim& src_time);
  void end();

 private:
  nn::Loop& loop_;
  nn::Tensor src_len_, max_len_, frames_;
};

/// RETURNN's CopyTaskDataset (10 symbols, 5-15 per sequence): transformer-copy's
/// and lstm-attention's task; `fixed`: the same sequences every epoch (dev).
emit::PyValue copy_task(int64_t num_seqs, bool fixed);

/// RETURNN's TaskNumberBaseConvertDataset (binary numbers of 8-32 digits to
/// hexadecimal): conformer-ctc's and conformer-transducer's task; `fixed`:
/// the same sequences every epoch (dev).
emit::PyValue number_task(int64_t num_seqs, bool fixed);
/// Those models' training setup: 200 fixed dev sequences, batches of 2000
/// frames and at most 40 sequences, learning rate 0.001, 10 epochs (the
/// training data depends on an option).
emit::TrainingSetup number_task_setup();
/// The Conformer encoder of that task's models (frontend channels 8 and 16,
/// time stride 2, relative positions up to 8).
nn::ConformerOptions number_task_encoder(int64_t blocks, int64_t heads, int64_t kernel,
                                         double dropout);
/// Every bundled model, in `retc list` order.
std::vector<ModelDef> bundled_models();

ModelDef model_12ax();
ModelDef model_12ax_wn();
ModelDef model_blstm_tagger();
ModelDef model_lstm_lm();
ModelDef model_transformer_copy();
ModelDef model_lstm_attention();
ModelDef model_conformer_ctc();
/// conformer-ctc, grown from 2 to 4 blocks by pretraining (ModelDef::stage_epochs).
ModelDef model_conformer_ctc_grow();
ModelDef model_conformer_large();
/// conformer-ctc's task with a transducer (RNA loss, time-synchronous search).
ModelDef model_conformer_transducer();
/// Speech: spoken digit strings (tools/make_digits.py) in digits_corpus_dir().
ModelDef model_digits_ctc();
/// $RETC_CORPUS_DIR/digits, else $XDG_CACHE_HOME/retc/corpora/digits, else
/// ~/.cache/retc/corpora/digits.
std::string digits_corpus_dir();
/// Published setups, written with retc's modules (rwth-i6/returnn-experiments).
ModelDef model_librispeech_att();
ModelDef model_swb_conformer_hybrid();
/// The conformer-12x512 model with `blocks` blocks (benchmarks), optionally
/// weight-normed on every Linear, optionally with dropout masks shared over
/// batch and time (as rf's default).
ModelDef conformer_ctc_model(int64_t blocks, bool weight_norm, bool dropout_broadcast = false);

}  // namespace retc::configs
