#include "configs/bundled.h"

#include "compiler/nn/tensor.h"

namespace retc::configs {

EndAtSourceLength::EndAtSourceLength(nn::Loop& loop, const nn::Tensor& memory,
                                     const ir::Dim& src_time)
    : loop_(loop) {
  nn::Builder& b = memory.builder();
  src_len_ = nn::cast(nn::length(memory, src_time), ir::DType::kFloat32);
  max_len_ = nn::cast(nn::reduce(src_len_, "max", {ir::Dim::batch()}), ir::DType::kInt32);
  frames_ = loop.state(nn::constant(b, 0.0));
}

void EndAtSourceLength::end() {
  nn::Tensor count = nn::add(frames_, nn::constant(frames_.builder(), 1.0));
  loop_.next(frames_, count);
  loop_.end(nn::compare(count, src_len_, "greater_equal"), max_len_);
}

std::vector<ModelDef> bundled_models() {
  return {model_12ax(),
          model_12ax_wn(),
          model_blstm_tagger(),
          model_lstm_lm(),
          model_transformer_copy(),
          model_lstm_attention(),
          model_conformer_ctc(),
          model_conformer_ctc_grow(),
          model_conformer_large(),
          model_conformer_transducer(),
          model_digits_ctc(),
          model_librispeech_att(),
          model_swb_conformer_hybrid()};
}

}  // namespace retc::configs
