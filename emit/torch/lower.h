// The torch target's lowering: each node becomes one Python expression over
// its inputs' names (returnn.frontend calls and the helpers of helpers.py).
// One function per kind (`lower<K>`, lower.cc), dispatched from a switch made
// from the kind list: a kind without a lowering fails the build, as on TF.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "emit/py_value.h"
#include "emit/torch/dims.h"
#include "ir/dim_table.h"
#include "ir/graph.h"

namespace retc::emit::torch {

/// A node attribute's value as Python: `a.dim<ir::attr::Axis>()`.
struct AttrText {
  const ir::DimTable& t;
  const ir::Node& n;
  template <ir::attr::Tag A>
  std::string dim() const {
    return t.id(n.attrs.get<A>());
  }
  template <ir::attr::Tag A>
  std::string dims() const {
    return dims_value(t, n.attrs.get<A>()).repr();
  }
  template <ir::attr::Tag A>
  std::string num() const {
    return PyValue(n.attrs.get<A>()).repr();
  }
};

/// What one kind's lowering reads: the graph, the dims' names, the node, and
/// the name of the model (`model` in a step, `self` in Model.__init__).
struct Lowering {
  const ir::Graph& g;
  const ir::DimTable& t;
  const ir::Node& n;
  absl::string_view model;
  AttrText a;
  /// The Python name of input k.
  const std::string& in(size_t k) const { return g.node(n.inputs[k]).name; }
  /// The node's dtype as a Python string literal.
  std::string dtype() const;
};

/// The Python of node `n`: its expression, renamed back to the IR's dims
/// where an input had a dim twice and `n` has each once (_unprime).
/// Whether the step reads extern data node `n`: a node reads it other than as
/// a loss's target, or it is marked. Data it does not read is not available
/// for inference (RETURNN's torch forward does not ask the dataset for it)
/// and not taken from extern_data.
bool reads_data(const ir::Graph& g, const ir::Node& n);

std::string value_of(const ir::Graph& g, const ir::DimTable& t, const ir::Node& n,
                     absl::string_view model);

/// A node written as one call from values further up: the nodes between
/// (`absorbed`, each read by the next only) are not written. The patterns:
/// - weight norm's fold, x·v scaled by g/‖v‖ (expand-parametrizations):
///   _weight_norm_dot, w made by torch's fused weight-norm kernel;
/// - normalize over one static dim, times a scale, plus a bias over it:
///   _normalize with both, torch's layer norm with its affine.
struct Fusion {
  std::vector<ir::NodeId> absorbed;
  std::string value;
};
std::optional<Fusion> fusion(const ir::Graph& g, const ir::DimTable& t, const ir::Node& n);

/// The arguments of `_random` for a random node `n` (distribution, dims, the
/// two numbers, seed, dtype): its lowering, and one spec of Model.__init__'s
/// `_randoms`, which draws them together.
std::string random_args(const ir::Graph& g, const ir::DimTable& t, const ir::Node& n);

}  // namespace retc::emit::torch
