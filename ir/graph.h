// Graph: nodes in creation order, params, and the marks (outputs, losses).
//
// Nodes are only created through `Graph::add`, the one checking factory: it
// infers (and checks) the output type from the inputs and attributes. Inputs
// always refer to earlier nodes, so creation order is a topological order and
// a graph can never hold a cycle. Rewrites add new nodes and call
// `replace_all_uses`; they never edit a node's kind, inputs or attributes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/node_kind.h"
#include "ir/param.h"
#include "ir/source_loc.h"
#include "ir/types.h"

namespace retc::ir {

struct NodeId {
  int32_t index = -1;
  bool valid() const { return index >= 0; }
  auto operator<=>(const NodeId&) const = default;
};

struct ParamId {
  int32_t index = -1;
  bool valid() const { return index >= 0; }
  auto operator<=>(const ParamId&) const = default;
};

struct Node {
  NodeKind kind;
  std::vector<NodeId> inputs;
  Attrs attrs;
  TensorType type;
  Stage stage = Stage::kStep;
  SourceLoc loc;
  /// Dotted path of the module whose call created it; empty at top level.
  std::string module_path;
  /// For kParam: which param.
  ParamId param;
  /// The target's name for the node (TF: its layer name); empty until the
  /// target's naming pass ran. Unique when set.
  std::string name;
};

/// A node marked as a network output, a loss or a search output (what
/// `retc search` decodes), with the user's name.
struct Mark {
  enum class Kind { kOutput, kLoss, kSearch };
  Kind kind;
  NodeId node;
  std::string name;
  SourceLoc loc;
  bool operator==(const Mark&) const = default;
};

/// "output", "loss" or "search": the mark's kind in IR text and messages.
absl::string_view mark_kind_name(Mark::Kind k);
std::optional<Mark::Kind> parse_mark_kind(absl::string_view s);

/// Gradient checkpointing of a module: the activations its calls compute
/// (the nodes whose module_path is `module_path` or under it) are not kept
/// for the backward pass but computed again there. A training-memory
/// annotation: the values are the same.
struct Checkpoint {
  std::string module_path;
  SourceLoc loc;
};

/// Whether a node of `module_path` is in the checkpointed module `c` (the
/// module itself or one of its descendants).
bool in_checkpoint(const Checkpoint& c, absl::string_view module_path);

/// Everything `Graph::add` needs besides kind and inputs.
struct NodeSpec {
  Attrs attrs;
  SourceLoc loc;
  std::string module_path;
  Stage stage = Stage::kStep;
  ParamId param;
  /// Required for kinds whose type is not computed from inputs (kData).
  std::optional<TensorType> type;
};

class Graph {
 public:
  /// The checking factory. Fails (InvalidArgument, message without location)
  /// when the inputs or attributes do not fit the kind.
  absl::StatusOr<NodeId> add(NodeKind kind, std::vector<NodeId> inputs, NodeSpec spec);

  ParamId add_param(Param p);
  Param& mutable_param(ParamId id) { return params_[id.index]; }

  const Node& node(NodeId id) const { return nodes_[id.index]; }
  const std::vector<Node>& nodes() const { return nodes_; }
  size_t size() const { return nodes_.size(); }
  NodeId id_of(size_t i) const { return NodeId{static_cast<int32_t>(i)}; }

  const Param& param(ParamId id) const { return params_[id.index]; }
  const std::vector<Param>& params() const { return params_; }

  void add_mark(Mark m) { marks_.push_back(std::move(m)); }
  /// Keeps the marks with keep(mark) (a task's roots; DCE drops the rest).
  template <class F>
  void keep_marks(F&& keep) {
    std::erase_if(marks_, [&](const Mark& m) { return !keep(m); });
  }
  const std::vector<Mark>& marks() const { return marks_; }

  /// Adds a gradient-checkpointed module (once per path; a second is ignored).
  void add_checkpoint(Checkpoint c);
  const std::vector<Checkpoint>& checkpoints() const { return checkpoints_; }

  /// Sets the name (an annotation, set by a target's naming pass).
  void set_name(NodeId id, std::string name) { nodes_[id.index].name = std::move(name); }
  /// Sets the stage (an annotation, used by the stage assignment pass).
  void set_stage(NodeId id, Stage s) { nodes_[id.index].stage = s; }

  /// Every use of `from` (inputs, marks, init references) now refers to `to`.
  /// Precondition: `to` precedes every user of `from`.
  void replace_all_uses(NodeId from, NodeId to);
  /// Every input use of `from` (not its marks or init references), but
  /// `to`'s own, now refers to `to`.
  void replace_input_uses(NodeId from, NodeId to);

  /// Reorders nodes so that inputs precede users again after a rewrite
  /// appended nodes: among the nodes whose inputs are placed, the one created
  /// first goes next (stable and deterministic). Returns whether it moved any.
  bool sort_topologically();

  /// Keeps the nodes with keep[i], renumbering ids; marks follow their node.
  /// Precondition: no kept node uses a dropped node.
  void compact(const std::vector<bool>& keep);

  // Equality up to dim identity: ir::equivalent (parser.h).

 private:
  void renumber(const std::vector<int32_t>& remap, std::vector<Node> nodes);

  std::vector<Node> nodes_;
  std::vector<Param> params_;
  std::vector<Mark> marks_;
  std::vector<Checkpoint> checkpoints_;
};

/// The output type of a node of `kind`; shared by the factory and verifier.
/// The activation kind's functions (attr func): "relu", "tanh", ...
const std::vector<absl::string_view>& activation_funcs();

absl::StatusOr<TensorType> infer_type(const Graph& g, NodeKind kind,
                                      const std::vector<NodeId>& inputs, const NodeSpec& spec);

/// Which nodes must be kept whatever uses them: params, data, marked nodes,
/// param assignments (side effects), and nodes giving a param's initial value. (A loop's loop_next
/// and loop_end nodes are live when anything of their loop is: see the dce pass.)
std::vector<bool> root_mask(const Graph& g);

}  // namespace retc::ir
