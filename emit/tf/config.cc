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
  out += format_assignment("task", std::string(task_name(opts.task.task)));
  out += format_assignment("device", opts.device);
  out += beam_entry(opts);
  out += "\n";
  for (const auto& [id, def] : net.dims) out += format_assignment(id, def);
  out += "\n";
  out += format_assignment("extern_data", net.extern_data);
  out += format_assignment("network", net.network);
  out += "\n";
  std::vector<std::pair<std::string, PyValue>> own;
  if (net.decouple_weight_decay) own.emplace_back("decouple_constraints", true);
  out += training_entries(opts, own);
  // Forward: RETURNN's forward_to_hdf of the output layer. Search: the search
  // flag; retc's runtime writes the hypotheses (RETURNN's own search output
  // file needs a vocabulary, which synthetic datasets lack).
  std::vector<std::pair<std::string, PyValue>> task;
  if (opts.task.task == Task::kForward) {
    task = {{"eval", opts.task.data},
            {"output_file", opts.task.output_file},
            {"forward_batch_size", opts.training.batch_size}};
  } else if (opts.task.task == Task::kSearch) {
    const ir::Node* hyps = first_marked(g, ir::Mark::Kind::kSearch);
    if (!hyps) return absl::InternalError("a search config without a search output");
    task = {{"search_data", opts.task.data},
            {"search_output_layer", hyps->name},
            {"search_do_eval", false}};
  }
  out += task_entries(opts, task);
  return out;
}

}  // namespace retc::emit::tf
