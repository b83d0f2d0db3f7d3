#include "emit/tf/config.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "emit/tf/net_dict.h"
#include "ir/status_macros.h"

namespace retc::emit::tf {

namespace {

bool stages_use_kind(const std::vector<StageGraph>& stages, ir::NodeKind kind) {
  for (const StageGraph& s : stages) {
    for (const ir::Node& n : s.graph->nodes()) {
      if (n.kind == kind) return true;
    }
  }
  return false;
}

}  // namespace

absl::StatusOr<std::string> write_config(const ir::Graph& g, const ConfigOptions& opts) {
  return write_config(std::vector<StageGraph>{{1, &g}}, opts);
}

absl::StatusOr<std::string> write_config(const std::vector<StageGraph>& stages,
                                         const ConfigOptions& opts) {
  const ir::Graph& g = *stages.back().graph;
  for (const TorchOnlyEntry& e : torch_only_entries(opts)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", e.option, ": the tf target has no ", e.name,
                     " (an option of RETURNN's torch engine); train with --backend torch"));
  }
  ASSIGN_OR_RETURN(const NetDict net, emit_net_dict(g));
  // Earlier stages: their dims take the last stage's names where they match.
  const ir::DimTable last_dims(g);
  std::vector<NetDict> earlier;
  for (size_t s = 0; s + 1 < stages.size(); ++s) {
    // (compile_to_config has checked that every stage reads the same extern data)
    ASSIGN_OR_RETURN(NetDict n, emit_net_dict(*stages[s].graph, &last_dims));
    earlier.push_back(std::move(n));
  }
  std::string out = config_header(g, opts);
  out += "from returnn.tensor import batch_dim\n";
  out += "from returnn.tf.util.data import FeatureDim, SpatialDim\n\n";
  out += format_assignment("backend", "tensorflow-net-dict");
  out += format_assignment("behavior_version", kBehaviorVersion);
  out += format_assignment("task", std::string(task_name(opts.task.task)));
  out += device_entry(opts);
  out += beam_entry(opts);
  out += "\n";
  for (const auto& [id, def] : net.dims) out += format_assignment(id, def);
  for (const NetDict& n : earlier) {
    for (const auto& [id, def] : n.dims) out += format_assignment(id, def);
  }
  out += "\n";
  out += format_assignment("extern_data", net.extern_data);
  if (stages_use_kind(stages, ir::NodeKind::kScatter))
    out += absl::StrCat(kScatterDefinitions, "\n\n");
  if (stages_use_kind(stages, ir::NodeKind::kNorm)) out += absl::StrCat(kNormDefinitions, "\n\n");
  auto any_net = [&](bool NetDict::*flag) {
    return net.*flag ||
           std::any_of(earlier.begin(), earlier.end(), [&](const NetDict& n) { return n.*flag; });
  };
  if (any_net(&NetDict::uses_linear)) out += absl::StrCat(kLinearDefinitions, "\n\n");
  if (any_net(&NetDict::uses_scaled_linear)) out += absl::StrCat(kScaledLinearDefinitions, "\n\n");
  if (stages_use_kind(stages, ir::NodeKind::kNormalize))
    out += absl::StrCat(kNormalizeDefinitions, "\n\n");
  if (stages_use_kind(stages, ir::NodeKind::kParamAssign))
    out += absl::StrCat(kAssignDefinitions, "\n\n");
  out += format_assignment("network", net.network);
  out += "\n";
  if (!earlier.empty()) {
    std::vector<PyValue> names;
    for (size_t s = 0; s < earlier.size(); ++s) {
      const std::string name = absl::StrCat("network_stage", s);
      out += format_assignment(name, earlier[s].network);
      names.push_back(PyValue::ref(name));
    }
    names.push_back(PyValue::ref("network"));
    out += "\n";
    out += stage_selector(stages);
    out += "\n\ndef get_network(epoch, **_kwargs):\n";
    out += "    \"\"\"The net dict of the pretraining stage that trains `epoch`.\"\"\"\n";
    absl::StrAppend(&out, "    return ", PyValue::list(std::move(names)).repr(),
                    "[_stage_of(epoch)]\n\n\n");
  }
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
  // A checkpoint converted from torch lacks the state variables of RETURNN's
  // random layers (not params: retc's runtime has checked every param is in
  // it); they keep their seeded initial state.
  if (opts.task.task != Task::kTrain) {
    for (const ir::Node& n : g.nodes()) {
      if (n.kind != ir::NodeKind::kFreshRandom) continue;
      task.emplace_back("load_ignore_missing_vars", true);
      break;
    }
  }
  out += task_entries(opts, task);
  return out;
}

}  // namespace retc::emit::tf
