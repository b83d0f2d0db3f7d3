// The backends: each target (emit/target.h) with its runner, in one plain
// table. `--backend NAME` picks one; "tf" is the default.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "emit/target.h"
#include "ir/param.h"
#include "runtime/returnn_session.h"

namespace retc::runtime {

/// How RETURNN runs a target's config in this process.
struct Runner {
  /// Constructs the network, runs one step on random data, lists variables.
  std::function<absl::StatusOr<CheckResult>(const std::string& config, const std::string& log)>
      check;
  /// RETURNN's training task on the config, with a progress line at most
  /// every `progress_seconds` (0: none).
  std::function<absl::StatusOr<TrainResult>(const std::string& config, const std::string& log,
                                            double progress_seconds)>
      train;
  /// The name under which `check` lists a param's variable.
  std::function<std::string(const ir::Param&)> variable_name;
  /// Training in several processes (`--nproc`, `--nnodes`); empty: one process only.
  std::function<absl::StatusOr<TrainResult>(const std::string& config, const Distributed& d,
                                            const std::string& log, double progress_seconds)>
      train_distributed;
};

struct Backend {
  const emit::Target& target;
  const Runner& runner;
};

/// Every backend, the default first.
const std::vector<Backend>& backends();

/// The backend named `name`; InvalidArgument naming the known ones.
absl::StatusOr<const Backend*> find_backend(absl::string_view name);

}  // namespace retc::runtime
