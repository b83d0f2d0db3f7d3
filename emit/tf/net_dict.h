// IR -> RETURNN-TF net dict: Dim definitions, extern_data and network, as
// PyValues. Each kind is lowered by one small function, dispatched from an
// exhaustive switch over NodeKind.
//
// Each param becomes a `variable` layer whose TF variable is named by the
// param's module path (`name_scope` "/lstm/ff_weight", `param_name` "param"
// -> `lstm/ff_weight/param:0`). Layers that consume params read them through
// `from` or `reuse_params` (for the native LSTM), so every param has exactly
// the checkpoint name its path gives. Weight noise and weight dropout on a
// param become the variable layer's own `param_variational_noise` and
// `param_dropout` (RETURNN applies them in training only, noise first).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "emit/py_value.h"
#include "ir/dim_table.h"
#include "ir/graph.h"

namespace retc::emit::tf {

struct NetDict {
  /// `time_dim = SpatialDim("time")`, ...: in dependency order.
  std::vector<std::pair<std::string, PyValue>> dims;
  PyValue extern_data;
  PyValue network;
  /// Whether weight decay is decoupled (RETURNN's `decouple_constraints`).
  bool decouple_weight_decay = false;
  /// Whether a layer calls the config's _retc_linear (kLinearDefinitions).
  bool uses_linear = false;
  /// Whether one has a scale (weight norm): _retc_scaled_linear (kScaledLinearDefinitions).
  bool uses_scaled_linear = false;
};

/// The Python functions that the net dict of a graph with scatter nodes
/// refers to (kScatter's lowering), to go before it in the config.
extern const char kScatterDefinitions[];
/// The Python functions param assignments call (eval layers), in a config with one.
extern const char kAssignDefinitions[];
/// The config's _retc_norm, the L2 norm's eval layer (lower_norm), in a config with one.
extern const char kNormDefinitions[];
/// The config's _retc_linear, a Linear's eval layer (lower_linear), in a config with one.
extern const char kLinearDefinitions[];
/// The config's _retc_scaled_linear, which _retc_linear calls for a weight-norm fold.
extern const char kScaledLinearDefinitions[];
/// The config's _retc_normalize, normalize's eval layer (lower_normalize), in a config with one.
extern const char kNormalizeDefinitions[];

/// Requires: a graph after pipeline(tf::target()) (legal, every node named).
/// With a `base` dim table (another stage's): dims take base's identifiers
/// where they match (ir::DimTable), and `dims` lists only the others.
absl::StatusOr<NetDict> emit_net_dict(const ir::Graph& g, const ir::DimTable* base = nullptr);

}  // namespace retc::emit::tf
