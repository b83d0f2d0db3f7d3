#include "emit/torch/target.h"

#include "emit/torch/config.h"
#include "emit/torch/legalize.h"
#include "emit/torch/naming.h"

namespace retc::emit::torch {

const Target& target() {
  static const Target kTarget{
      "torch",
      "RETURNN's PyTorch engine (returnn.frontend on torch)",
      {{"torch-legalize", "check what the torch target lowers (kinds, param options)",
        [](ir::Graph& g) { return legalize(g); }},
       {"torch-naming", "give every node its Python name", [](ir::Graph& g) { return naming(g); }}},
      [](const ir::Graph& g, const ConfigOptions& opts) { return write_config(g, opts); },
      [](const std::vector<StageGraph>& stages, const ConfigOptions& opts) {
        return write_config(stages, opts);
      },
  };
  return kTarget;
}

}  // namespace retc::emit::torch
