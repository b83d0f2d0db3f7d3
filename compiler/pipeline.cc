#include "compiler/pipeline.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/passes/assign_stages.h"
#include "compiler/passes/dce.h"
#include "compiler/passes/expand_parametrizations.h"
#include "compiler/passes/lower_init.h"
#include "ir/status_macros.h"
#include "ir/verifier.h"

namespace retc {
namespace {

absl::Status verified_after(absl::string_view pass, const ir::Graph& g) {
  absl::Status s = ir::verify(g);
  if (s.ok()) return s;
  return absl::InternalError(absl::StrCat(
      "internal error: the graph fails verification after pass '", pass, "': ", s.message()));
}

std::string names_of(const std::vector<const PassInfo*>& table) {
  std::vector<std::string> all;
  for (const PassInfo* p : table) all.emplace_back(p->name);
  return absl::StrJoin(all, ", ");
}

}  // namespace

const std::vector<PassInfo>& neutral_passes() {
  // The recipe. (The graph is verified before the first pass.)
  // 1. Stages first: users' initializer subgraphs become param-init; the
  //    passes after it create their param-init nodes as such.
  // 2. Initializers are lowered before parametrizations: weight norm's g is
  //    initialized from v's initial value.
  // 3. DCE last: the nodes that expansion replaced (and anything no output,
  //    loss, param or data needs) go before a target names or lowers them.
  // A target's own passes (legalize, naming) follow (emit/target.h).
  static const std::vector<PassInfo> kPasses = {
      {"assign-stages", "mark nodes that run once (param-init) or every step",
       [](ir::Graph& g) { return passes::assign_stages(g); }},
      {"lower-init", "turn initializers into seeded param-init subgraphs",
       [](ir::Graph& g) { return passes::lower_init(g); }},
      {"expand-parametrizations", "rewrite weight norm, weight dropout and weight noise",
       [](ir::Graph& g) { return passes::expand_parametrizations(g); }},
      {"dce", "remove nodes no output, loss, param or data depends on",
       [](ir::Graph& g) { return passes::dce(g); }},
  };
  return kPasses;
}

absl::StatusOr<std::vector<const PassInfo*>> find_passes(const std::vector<const PassInfo*>& table,
                                                         const std::vector<std::string>& names) {
  std::vector<const PassInfo*> out;
  for (const std::string& name : names) {
    const PassInfo* found = nullptr;
    for (const PassInfo* p : table) {
      if (p->name == name) found = p;
    }
    if (!found) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown pass '", name, "'; passes: ", names_of(table)));
    }
    out.push_back(found);
  }
  return out;
}

absl::StatusOr<std::vector<const PassInfo*>> passes_up_to(const std::vector<const PassInfo*>& table,
                                                          absl::string_view last) {
  std::vector<const PassInfo*> out;
  for (const PassInfo* p : table) {
    out.push_back(p);
    if (p->name == last) return out;
  }
  if (last.empty()) return out;
  return absl::NotFoundError(absl::StrCat("unknown pass '", last, "'; passes: ", names_of(table)));
}

absl::Status run_passes(ir::Graph& g, const std::vector<const PassInfo*>& passes,
                        const PassObserver& observer) {
  // The model as built must already be well-formed: errors here are the
  // user's (e.g. a stage violation), reported with their source line.
  RETURN_IF_ERROR(ir::verify(g));
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
    RETURN_IF_ERROR(verified_after(pass->name, g));
    if (observer) observer(pass->name, g);
  }
  return absl::OkStatus();
}

}  // namespace retc
