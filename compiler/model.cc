#include "compiler/model.h"

#include "compiler/nn/error.h"

namespace retc {

emit::ConfigOptions config_options(const ModelDef& def, const std::string& model_dir) {
  emit::ConfigOptions opts;
  opts.model_name = def.name;
  opts.training = def.training;
  opts.model_path = model_dir + "/network";
  opts.training.extra.emplace_back("learning_rate_file", model_dir + "/learning_rates");
  return opts;
}

absl::StatusOr<ir::Graph> build_model(const ModelDef& def) {
  ir::Graph g;
  nn::Builder b(g);
  try {
    def.build(b);
    b.finish();
  } catch (const nn::ModelError& e) {
    return e.status();
  }
  return g;
}

}  // namespace retc
