// The target-neutral pass pipeline: its passes in order, as one readable
// table, and the driver that runs any list of passes with verification.
// A target appends its own passes (emit/target.h: pipeline()).
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

struct PassInfo {
  absl::string_view name;
  absl::string_view summary;
  /// Error, or whether the pass changed the graph.
  std::function<absl::StatusOr<bool>(ir::Graph&)> run;
};

/// The target-neutral passes, in pipeline order.
const std::vector<PassInfo>& neutral_passes();

/// Runs `passes` in order. The graph is verified before the first pass and
/// after every pass that changed it; a failure names the pass. User errors
/// (InvalidArgument, with the user's line) pass through as they are.
absl::Status run_passes(ir::Graph& g, const std::vector<const PassInfo*>& passes,
                        const PassObserver& observer = {});

/// The passes of `table` named `names`, in that order; InvalidArgument for
/// an unknown name (listing the known ones).
absl::StatusOr<std::vector<const PassInfo*>> find_passes(const std::vector<const PassInfo*>& table,
                                                         const std::vector<std::string>& names);

/// `table` up to and including the pass `last` (all of it if `last` is
/// empty); NotFound for an unknown name.
absl::StatusOr<std::vector<const PassInfo*>> passes_up_to(const std::vector<const PassInfo*>& table,
                                                          absl::string_view last);

}  // namespace retc
