#include "configs/bundled.h"

namespace retc::configs {

std::vector<ModelDef> bundled_models() {
  return {model_12ax(),           model_12ax_wn(),          model_blstm_tagger(),
          model_lstm_lm(),        model_transformer_copy(), model_lstm_attention(),
          model_conformer_ctc(),  model_conformer_large()};
}

}  // namespace retc::configs
