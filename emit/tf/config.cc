#include "emit/tf/config.h"

#include "absl/strings/str_cat.h"
#include "emit/tf/net_dict.h"
#include "ir/status_macros.h"

namespace retc::emit::tf {

absl::StatusOr<std::string> write_config(const ir::Graph& g, const ConfigOptions& opts) {
  ASSIGN_OR_RETURN(const NetDict net, emit_net_dict(g));
  std::string out = config_header(g, opts);
  out += "from returnn.tensor import batch_dim\n";
  out += "from returnn.tf.util.data import FeatureDim, SpatialDim\n\n";
  out += format_assignment("backend", "tensorflow-net-dict");
  out += format_assignment("behavior_version", kBehaviorVersion);
  out += format_assignment("task", "train");
  out += format_assignment("device", opts.device);
  out += "\n";
  for (const auto& [id, def] : net.dims) out += format_assignment(id, def);
  out += "\n";
  out += format_assignment("extern_data", net.extern_data);
  out += format_assignment("network", net.network);
  out += "\n";
  std::vector<std::pair<std::string, PyValue>> own;
  if (net.decouple_weight_decay) own.emplace_back("decouple_constraints", true);
  out += training_entries(opts, own);
  return out;
}

}  // namespace retc::emit::tf
