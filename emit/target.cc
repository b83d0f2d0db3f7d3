#include "emit/target.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/diagnostic.h"
#include "ir/status_macros.h"

namespace retc::emit {

std::vector<const PassInfo*> pipeline(const Target& target) {
  std::vector<const PassInfo*> out;
  for (const PassInfo& p : neutral_passes()) out.push_back(&p);
  for (const PassInfo& p : target.passes) out.push_back(&p);
  return out;
}

namespace {

std::vector<int64_t> sizes(const std::vector<ir::Dim>& dims) {
  std::vector<int64_t> out;
  for (const ir::Dim& d : dims) out.push_back(d.size().value_or(-1));
  return out;
}

// The extern data a graph reads: key, dims (by kind, name and size), dtype, sparse dim.
std::vector<std::string> data_signature(const ir::Graph& g) {
  std::vector<std::string> out;
  for (const ir::Node& n : g.nodes()) {
    if (n.kind != ir::NodeKind::kData) continue;
    out.push_back(absl::StrCat(n.attrs.get<ir::attr::Key>(), " ", n.type.describe()));
  }
  return out;
}

// Each earlier stage reads the last stage's extern data, and its params are
// among the last stage's, with the same shapes and dtypes: a stage starts
// from the previous one's params by name, and the torch target's model holds
// the last stage's params throughout.
absl::Status check_stages_grow(const ModelDef& def, const std::vector<ir::Graph>& graphs) {
  const ir::Graph& last = graphs.back();
  for (size_t s = 0; s + 1 < graphs.size(); ++s) {
    if (data_signature(graphs[s]) != data_signature(last)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "model '", def.name, "': pretraining stage ", s, " reads other extern data (",
          absl::StrJoin(data_signature(graphs[s]), ", "), ") than the last stage (",
          absl::StrJoin(data_signature(last), ", "), "): every stage reads the same data"));
    }
    for (const ir::Param& p : graphs[s].params()) {
      const ir::Param* q = nullptr;
      for (const ir::Param& c : last.params()) {
        if (c.path == p.path) q = &c;
      }
      if (q && sizes(q->dims) == sizes(p.dims) && q->dtype == p.dtype) continue;
      return ir::user_error(
          p.loc,
          absl::StrCat("pretraining stage ", s, " of '", def.name, "' has the param '", p.path,
                       "' ", ir::describe(p.dims),
                       q ? absl::StrCat(", which the last stage has as ", ir::describe(q->dims))
                         : std::string(", which the last stage lacks"),
                       ": each stage's params must be among the last stage's, with the same shapes "
                       "(the network grows)"));
    }
  }
  return absl::OkStatus();
}

// RETURNN's DummyGenericDataset (random data from the extern data's
// template) describes each data by its feature dim (or sparse classes) and
// fails in a bare AssertionError on data without one (raw samples [B, time]).
absl::Status check_random_data(const TrainingSetup& t, const ir::Graph& g) {
  for (const PyValue* dataset : {&t.train, &t.dev}) {
    const PyValue* cls = dataset->get("class");
    if (!cls || cls->repr() != "\"DummyGenericDataset\"") continue;
    for (const ir::Node& n : g.nodes()) {
      if (n.kind != ir::NodeKind::kData || n.type.sparse_dim) continue;
      const bool feature =
          std::any_of(n.type.dims.begin(), n.type.dims.end(),
                      [](const ir::Dim& d) { return !d.is_batch() && !d.is_dynamic(); });
      if (feature) continue;
      return ir::user_error(
          n.loc,
          absl::StrCat("extern data '", n.attrs.get<ir::attr::Key>(), "' ", n.type.describe(),
                       " has no feature dim, which RETURNN's DummyGenericDataset (the "
                       "training setup's random data) needs; give it one of size 1, or "
                       "train on another dataset"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ir::Graph> compile_model(const ModelDef& def, const Target& target, Task task,
                                        int stage) {
  ASSIGN_OR_RETURN(ir::Graph g, build_model(def, stage));
  RETURN_IF_ERROR(select_task(g, task, def.name));
  RETURN_IF_ERROR(run_passes(g, pipeline(target)));
  if (task != Task::kSearch) {
    for (const ir::Node& n : g.nodes()) {
      if (n.kind != ir::NodeKind::kChoice) continue;
      return ir::user_error(
          n.loc,
          absl::StrCat(
              "choice: the ", task_name(task), " task computes '", def.name,
              "' with a loop's choice, which only search makes (retc search); in training, feed "
              "the targets instead (teacher forcing)"));
    }
  }
  return g;
}

absl::StatusOr<ir::Graph> compile_outputs(const ModelDef& def, const Target& target,
                                          const std::vector<std::string>& outputs) {
  ASSIGN_OR_RETURN(ir::Graph g, build_model(def, -1));
  RETURN_IF_ERROR(select_task(g, Task::kForward, def.name));
  std::vector<std::string> have;
  for (const ir::Mark& m : g.marks()) have.push_back(m.name);
  for (const std::string& o : outputs) {
    if (std::find(have.begin(), have.end(), o) == have.end()) {
      return absl::NotFoundError(absl::StrCat("model '", def.name, "' has no output '", o,
                                              "' (its outputs: ", absl::StrJoin(have, ", "), ")"));
    }
  }
  g.keep_marks([&](const ir::Mark& m) {
    return std::find(outputs.begin(), outputs.end(), m.name) != outputs.end();
  });
  RETURN_IF_ERROR(run_passes(g, pipeline(target)));
  return g;
}

absl::StatusOr<std::string> compile_to_config(const ModelDef& def, const Target& target,
                                              const ConfigOptions& opts) {
  RETURN_IF_ERROR(check_training_setup(opts.training, def.name));
  if (def.stage_epochs.empty() || opts.task.task != Task::kTrain) {
    ASSIGN_OR_RETURN(ir::Graph g, compile_model(def, target, opts.task.task));
    RETURN_IF_ERROR(check_random_data(opts.training, g));
    return target.write_config(g, opts);
  }
  std::vector<ir::Graph> graphs;
  for (size_t s = 0; s <= def.stage_epochs.size(); ++s) {
    ASSIGN_OR_RETURN(ir::Graph g, compile_model(def, target, opts.task.task, static_cast<int>(s)));
    graphs.push_back(std::move(g));
  }
  RETURN_IF_ERROR(check_stages_grow(def, graphs));
  RETURN_IF_ERROR(check_random_data(opts.training, graphs.back()));
  std::vector<StageGraph> stages;
  for (size_t s = 0; s < graphs.size(); ++s)
    stages.push_back({s == 0 ? 1 : def.stage_epochs[s - 1], &graphs[s]});
  return target.write_staged_config(stages, opts);
}

absl::Status unlowerable(const Target& target, const ir::Node& n, absl::string_view why) {
  return absl::InternalError(absl::StrCat("internal error: target '", target.name,
                                          "' cannot lower a ", ir::node_kind_name(n.kind),
                                          " node here: ", why));
}

}  // namespace retc::emit
