#include "compiler/model.h"

#include "compiler/nn/error.h"
#include "compiler/pipeline.h"

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

absl::StatusOr<ir::Graph> compile_model(const ModelDef& def) {
  auto g = build_model(def);
  if (!g.ok()) return g.status();
  if (absl::Status s = run_pipeline(*g); !s.ok()) return s;
  return g;
}

absl::StatusOr<std::string> compile_to_config(const ModelDef& def,
                                              const emit::ConfigOptions& opts) {
  auto g = compile_model(def);
  if (!g.ok()) return g.status();
  return emit::write_config(*g, opts);
}

}  // namespace retc
