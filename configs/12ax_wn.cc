// 12ax-wn: the 12ax demo with weight norm (LSTM input weights and the output
// layer), weight dropout (LSTM recurrent weights) and decoupled weight decay
// on every weight, all set after construction.
#include "compiler/nn/parametrize.h"
#include "configs/bundled.h"
#include "configs/model_12ax.h"

namespace retc::configs {

ModelDef model_12ax_wn() {
  ModelDef def = model_12ax_with(
      [](const OptionValues& o) {
        return [drop = o.get_float("weight_dropout"),
                decay = o.get_float("weight_decay")](Model12ax& m) {
          nn::weight_norm(*m.lstm, "ff_weight");
          nn::weight_norm(*m.out, "weight");
          nn::weight_dropout(*m.lstm, "rec_weight", drop);
          m.apply_params(
              {ir::ParamKind::kWeight, ""},
              [decay](const std::string&, nn::ParamSetter& p) { p.set_weight_decay(decay); });
        };
      },
      {float_option("weight_dropout", 0.1, "dropout on the LSTM's recurrent weight", 0.0, 1.0),
       float_option("weight_decay", 1e-5, "decoupled weight decay on every weight", 0.0)});
  def.name = "12ax-wn";
  def.description = "12ax with weight norm, weight dropout and decoupled weight decay";
  return def;
}

}  // namespace retc::configs
