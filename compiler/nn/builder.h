// Builder: records a model into an ir::Graph.
//
// A model's build function receives a Builder, declares extern data, hands
// the root module over (which fixes param paths), and calls forward():
//
//   void build(nn::Builder& b) {
//     auto x = b.extern_data("data", {Dim::batch(), time, in});
//     auto model = b.set_root(std::make_shared<MyModel>(in, classes));
//     model->forward(x).mark_as_output();
//   }
#pragma once

#include <memory>
#include <optional>
#include <source_location>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "compiler/nn/module.h"
#include "compiler/nn/tensor.h"
#include "ir/graph.h"

namespace retc::nn {

class Builder {
 public:
  explicit Builder(ir::Graph& g) : graph_(g) {}
  /// Builds pretraining stage `stage` (0: the first), which starts at `epoch`.
  Builder(ir::Graph& g, int stage, int64_t epoch) : graph_(g), stage_(stage), epoch_(epoch) {}
  Builder(const Builder&) = delete;
  Builder& operator=(const Builder&) = delete;

  /// The pretraining stage being built (ModelDef::stage_epochs): 0 for a
  /// model without stages and in its first stage, e.g. to grow the network:
  /// `int layers = b.stage() == 0 ? 2 : 4;`.
  int stage() const { return stage_; }
  /// The first epoch of that stage (1 in the first).
  int64_t epoch() const { return epoch_; }

  /// Declares input data (a RETURNN extern_data entry) named `key`.
  /// Sparse data (class indices) gives `sparse_dim` and an integer dtype.
  Tensor extern_data(std::string key, std::vector<ir::Dim> dims,
                     ir::DType dtype = ir::DType::kFloat32,
                     std::optional<ir::Dim> sparse_dim = std::nullopt,
                     std::source_location loc = std::source_location::current());

  /// Makes `root` the model's root module: assigns every module and param its
  /// path and adds the params to the graph in named_parameters() order.
  template <class M>
  std::shared_ptr<M> set_root(std::shared_ptr<M> root,
                              std::source_location loc = std::source_location::current()) {
    set_root_impl(root, loc);
    return root;
  }

  /// The graph node reading `p`'s current value, or its reparametrized
  /// (derived) value: one node per param, however often it is read.
  Tensor param(const Parameter& p, std::source_location loc = std::source_location::current());

  /// Adds a node through the graph's checking factory; a failure becomes a
  /// ModelError at `loc` naming the current module.
  Tensor add(ir::NodeKind kind, const std::vector<Tensor>& inputs, ir::Attrs attrs,
             const ir::SourceLoc& loc);
  /// An operator (a + b): no caller location exists, so it takes the
  /// innermost module call's, or else that of the later-made operand.
  Tensor add_operator(ir::NodeKind kind, const Tensor& a, const Tensor& b);

  void mark(const Tensor& t, ir::Mark::Kind kind, std::string name, const ir::SourceLoc& loc);

  /// Copies the params' final options (set after construction) into the graph
  /// and checks them (and that every loop ended).
  void finish();

  // Loops: see compiler/nn/loop.h (nn::Loop is the interface).
  /// nn::cond's branches: while one is active (branch 0: then, 1: else),
  /// new nodes belong to it (attrs cond, branch); not nested, not in a loop.
  int32_t begin_cond(const ir::SourceLoc& loc);
  void set_branch(int32_t cond, int64_t branch) { active_branch_ = {cond, branch}; }
  void end_cond() { active_branch_.reset(); }
  int32_t begin_loop(const ir::Dim& axis, const ir::SourceLoc& loc);
  void add_loop_state(int32_t loop, const Tensor& state);
  void set_loop_next(int32_t loop, const Tensor& state, const ir::SourceLoc& loc);
  void end_loop(int32_t loop, const ir::SourceLoc& loc);
  /// The loop a node is computed in, or -1.
  int32_t loop_of(const Tensor& t) const;
  /// A param assignment (nn::assign, nn::assign_add; `mode` assign or add):
  /// outside loops and conds, of a param without a reparametrization; at
  /// finish, the param must not be trainable.
  void add_assign(const Parameter& p, const Tensor& value, std::string mode,
                  const ir::SourceLoc& loc);
  /// A value outside every loop that has the dim `d` (whose sizes it gives,
  /// e.g. the extern data with a time axis); undefined if none has it.
  Tensor size_source(const ir::Dim& d);

  const ir::Graph& graph() const { return graph_; }

 private:
  friend class ModuleScope;
  struct Scope {
    const Module* module;
    ir::SourceLoc loc;
  };
  void set_root_impl(std::shared_ptr<Module> root, std::source_location loc);
  std::string where() const;

  ir::Graph& graph_;
  int stage_ = 0;
  int64_t epoch_ = 1;
  std::shared_ptr<Module> root_;
  ir::SourceLoc root_loc_;
  std::vector<Scope> scopes_;
  std::vector<Parameter> decls_;
  /// The node reading each param: its derived value if reparametrized.
  absl::flat_hash_map<const void*, ir::NodeId> param_nodes_;
  struct LoopInfo {
    ir::Dim axis;
    ir::SourceLoc loc;
    bool ended = false;
    std::vector<std::pair<ir::NodeId, bool>> states;  // state node, has a next value
  };
  std::vector<LoopInfo> loops_;
  std::vector<int32_t> loop_of_;  // per node: its loop or -1
  int32_t active_loop_ = -1;
  int32_t conds_ = 0;
  std::vector<std::pair<Parameter, ir::SourceLoc>> assigns_;  // each assigned param, where
  std::optional<std::pair<int64_t, int64_t>> active_branch_;  // (cond, branch)
};

}  // namespace retc::nn
