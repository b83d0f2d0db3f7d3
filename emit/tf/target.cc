#include "emit/tf/target.h"

#include "emit/tf/config.h"
#include "emit/tf/legalize.h"
#include "emit/tf/naming.h"

namespace retc::emit::tf {

const Target& target() {
  // Legalize before naming: a model RETURNN cannot run fails at the user's
  // line before anything is named for it.
  static const Target kTarget{
      "tf",
      "RETURNN's TensorFlow backend (net dicts)",
      {{"tf-legalize", "check RETURNN-TF's rules (loss targets, weight decay, weight noise)",
        [](ir::Graph& g) { return legalize(g); }},
       {"tf-naming", "give every node its RETURNN layer name",
        [](ir::Graph& g) { return naming(g); }}},
      [](const ir::Graph& g, const ConfigOptions& opts) { return write_config(g, opts); },
      [](const std::vector<StageGraph>& stages, const ConfigOptions& opts) {
        return write_config(stages, opts);
      },
  };
  return kTarget;
}

}  // namespace retc::emit::tf
