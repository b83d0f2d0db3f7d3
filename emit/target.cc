#include "emit/target.h"

#include "absl/strings/str_cat.h"
#include "ir/status_macros.h"

namespace retc::emit {

std::vector<const PassInfo*> pipeline(const Target& target) {
  std::vector<const PassInfo*> out;
  for (const PassInfo& p : neutral_passes()) out.push_back(&p);
  for (const PassInfo& p : target.passes) out.push_back(&p);
  return out;
}

absl::StatusOr<ir::Graph> compile_model(const ModelDef& def, const Target& target, Task task) {
  ASSIGN_OR_RETURN(ir::Graph g, build_model(def));
  RETURN_IF_ERROR(select_task(g, task, def.name));
  RETURN_IF_ERROR(run_passes(g, pipeline(target)));
  if (task != Task::kSearch) {
    for (const ir::Node& n : g.nodes()) {
      if (n.kind != ir::NodeKind::kChoice) continue;
      return absl::InvalidArgumentError(absl::StrCat(
          n.loc.str(), ": error: choice: the ", task_name(task), " task computes '", def.name,
          "' with a loop's choice, which only search makes (retc search); in training, feed "
          "the targets instead (teacher forcing)"));
    }
  }
  return g;
}

absl::StatusOr<std::string> compile_to_config(const ModelDef& def, const Target& target,
                                              const ConfigOptions& opts) {
  RETURN_IF_ERROR(check_training_setup(opts.training, def.name));
  ASSIGN_OR_RETURN(ir::Graph g, compile_model(def, target, opts.task.task));
  return target.write_config(g, opts);
}

absl::Status unlowerable(const Target& target, const ir::Node& n, absl::string_view why) {
  return absl::InternalError(absl::StrCat("internal error: target '", target.name,
                                          "' cannot lower a ", ir::node_kind_name(n.kind),
                                          " node here: ", why));
}

}  // namespace retc::emit
