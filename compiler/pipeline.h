// The pass pipeline: the order in which passes run, as one readable function,
// and a table of pass names for the CLI.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "ir/graph.h"

namespace retc {

/// Called after each pass that changed the graph (for dumps).
using PassObserver = std::function<void(absl::string_view pass, const ir::Graph&)>;

/// Runs the standard pipeline. The graph is verified before the first pass
/// and after every pass that changed it; a failure names the pass.
absl::Status run_pipeline(ir::Graph& g, const PassObserver& observer = {});

/// Runs the named passes (see pass_table) in the given order, verifying as
/// run_pipeline does. An unknown name is an InvalidArgument error.
absl::Status run_passes(ir::Graph& g, const std::vector<std::string>& names,
                        const PassObserver& observer = {});

/// The names of the standard pipeline's passes up to and including `last`
/// (all of them if `last` is empty); NotFound for an unknown name.
absl::StatusOr<std::vector<std::string>> pipeline_up_to(absl::string_view last);

struct PassInfo {
  absl::string_view name;
  absl::string_view summary;
  std::function<absl::StatusOr<bool>(ir::Graph&)> run;
};
/// Every pass, by name, in pipeline order.
const std::vector<PassInfo>& pass_table();

}  // namespace retc
