#include "compiler/pipeline.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/passes/assign_stages.h"
#include "compiler/passes/dce.h"
#include "compiler/passes/expand_parametrizations.h"
#include "compiler/passes/lower_init.h"
#include "compiler/passes/naming.h"
#include "ir/verifier.h"

namespace retc {
namespace {

absl::Status verified_after(absl::string_view pass, const ir::Graph& g) {
  absl::Status s = ir::verify(g);
  if (s.ok()) return s;
  return absl::InternalError(absl::StrCat(
      "internal error: the graph fails verification after pass '", pass, "': ", s.message()));
}

}  // namespace

const std::vector<PassInfo>& pass_table() {
  // Order: stages first (users' initializer subgraphs become param-init; the
  // passes after it make their param-init nodes as such); initializers are
  // lowered before parametrizations (weight norm's g is initialized from v's
  // initial value); dce before naming, so removed nodes (the expanded
  // parametrization nodes) take no names.
  static const std::vector<PassInfo> kPasses = {
      {"assign-stages", "mark nodes that run once (param-init) or every step",
       [](ir::Graph& g) { return passes::assign_stages(g); }},
      {"lower-init", "turn initializers into seeded param-init subgraphs",
       [](ir::Graph& g) { return passes::lower_init(g); }},
      {"expand-parametrizations", "rewrite weight norm, weight dropout and weight noise",
       [](ir::Graph& g) { return passes::expand_parametrizations(g); }},
      {"dce", "remove nodes no output, loss, param or data depends on",
       [](ir::Graph& g) { return passes::dce(g); }},
      {"naming", "give every node its RETURNN layer name",
       [](ir::Graph& g) { return passes::naming(g); }},
  };
  return kPasses;
}

absl::StatusOr<std::vector<std::string>> pipeline_up_to(absl::string_view last) {
  std::vector<std::string> names;
  for (const PassInfo& p : pass_table()) {
    names.emplace_back(p.name);
    if (p.name == last) return names;
  }
  if (last.empty()) return names;
  std::vector<std::string> all;
  for (const PassInfo& p : pass_table()) all.emplace_back(p.name);
  return absl::NotFoundError(
      absl::StrCat("unknown pass '", last, "'; passes: ", absl::StrJoin(all, ", ")));
}

absl::Status run_pipeline(ir::Graph& g, const PassObserver& observer) {
  return run_passes(g, *pipeline_up_to(""), observer);
}

absl::Status run_passes(ir::Graph& g, const std::vector<std::string>& names,
                        const PassObserver& observer) {
  std::vector<const PassInfo*> passes;
  for (const std::string& name : names) {
    const PassInfo* found = nullptr;
    for (const PassInfo& p : pass_table()) {
      if (p.name == name) found = &p;
    }
    if (!found) return absl::InvalidArgumentError(pipeline_up_to(name).status().message());
    passes.push_back(found);
  }
  // The model as built must already be well-formed: errors here are the
  // user's (e.g. a stage violation), reported with their source line.
  if (absl::Status s = ir::verify(g); !s.ok()) return s;
  for (const PassInfo* pass : passes) {
    auto changed = pass->run(g);
    if (!changed.ok()) {
      // A user error (InvalidArgument) already names the user's line; an
      // internal one names the pass.
      if (absl::IsInvalidArgument(changed.status())) return changed.status();
      return absl::Status(
          changed.status().code(),
          absl::StrCat("internal error in pass '", pass->name, "': ", changed.status().message()));
    }
    if (!*changed) continue;
    if (absl::Status s = verified_after(pass->name, g); !s.ok()) return s;
    if (observer) observer(pass->name, g);
  }
  return absl::OkStatus();
}

}  // namespace retc
