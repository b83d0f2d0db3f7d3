#include "emit/torch/loops.h"

#include <algorithm>
#include <array>
#include <memory>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "emit/torch/lower.h"

namespace retc::emit::torch {

bool has_final_state_reader(const ir::Graph& g, const ir::Node& n) {
  if (n.kind != ir::NodeKind::kLstm) return false;
  for (const ir::Node& m : g.nodes()) {
    if (m.kind == ir::NodeKind::kLstmFinal && &g.node(m.inputs[0]) == &n) return true;
  }
  return false;
}

void write_assignment(CodeWriter& w, const ir::Graph& g, const ir::DimTable& t, const ir::Node& n) {
  // Extern data that nothing reads (a target in a forward step) is not taken:
  // RETURNN's torch forward has it only where the dataset does.
  if (n.kind == ir::NodeKind::kData && !reads_data(g, n)) {
    bool target = false;
    for (const ir::Node& m : g.nodes()) {
      for (ir::NodeId in : m.inputs) target = target || &g.node(in) == &n;
    }
    if (!target) return;
  }
  std::string extra;
  if (n.kind == ir::NodeKind::kCumConcat) extra = absl::StrCat(", _acc_", n.name);
  if (has_final_state_reader(g, n)) extra = absl::StrCat(", _state_", n.name);
  w.line(n.name, extra, " = ", value_of(g, t, n, "model"));
}

namespace {

// Before a loop: the states' initial values (their names and next values
// collected), the stacked values' frame lists, the cum_concat caches.
void write_loop_prologue(CodeWriter& w, const ir::Graph& g, const ir::DimTable& t,
                         const ir::LoopAnalysis& loops, const ir::Loop& loop,
                         std::vector<std::string>& states, std::vector<std::string>& nexts) {
  for (ir::NodeId m : loop.members) {
    const ir::Node& n = g.node(m);
    if (n.kind == ir::NodeKind::kLoopState) {
      w.line(n.name, " = ", value_of(g, t, n, "model"));
      states.push_back(n.name);
      nexts.push_back(g.node(loops.next_of_state[m.index]).name);
    }
    if (loops.stacked[m.index]) w.line("_frames_of_", n.name, " = []");
    if (n.kind == ir::NodeKind::kCumConcat) w.line("_acc_", n.name, " = None");
  }
}

// At the end of a frame: the states take their next values.
void write_next_states(CodeWriter& w, const std::vector<std::string>& states,
                       const std::vector<std::string>& nexts) {
  if (!states.empty()) w.line(absl::StrJoin(states, ", "), " = ", absl::StrJoin(nexts, ", "));
}

// Which members of a search loop depend on this frame's choice (the states
// do not; next values and the end come after it), and which of those before
// it are read after it (they follow their hypotheses).
struct ChoiceSplit {
  std::vector<bool> after, read_after;
};
ChoiceSplit split_at_choice(const ir::Graph& g, const ir::LoopAnalysis& loops, size_t id) {
  const ir::Loop& loop = loops.loops[id];
  ChoiceSplit s{std::vector<bool>(g.size(), false), std::vector<bool>(g.size(), false)};
  for (ir::NodeId m : loop.members) {
    const ir::Node& n = g.node(m);
    if (n.kind == ir::NodeKind::kLoopState) continue;
    bool a = n.kind == ir::NodeKind::kChoice || n.kind == ir::NodeKind::kLoopNext ||
             n.kind == ir::NodeKind::kLoopEnd;
    for (ir::NodeId in : n.inputs) a = a || s.after[in.index];
    s.after[m.index] = a;
  }
  for (ir::NodeId m : loop.members) {
    const ir::Node& n = g.node(m);
    if (!s.after[m.index] || n.kind == ir::NodeKind::kChoice) continue;
    for (ir::NodeId in : n.inputs) {
      if (loops.loop_of[in.index] == static_cast<int32_t>(id)) s.read_after[in.index] = true;
    }
  }
  return s;
}

// After the choice: the values of the hypotheses before it that are read
// later follow their hypotheses (_Search.follow), as do the cum_concat caches.
void write_follow(CodeWriter& w, const ir::Graph& g, const ir::LoopAnalysis& loops,
                  const ir::Loop& loop, const ChoiceSplit& s, const std::string& search) {
  for (ir::NodeId m : loop.members) {
    const ir::Node& n = g.node(m);
    if (s.after[m.index]) continue;
    if (s.read_after[m.index] || (loops.stacked[m.index] && n.kind != ir::NodeKind::kLoopState))
      w.line(n.name, " = ", search, ".follow(", n.name, ")");
    if (n.kind == ir::NodeKind::kCumConcat)
      w.line("_acc_", n.name, " = ", search, ".follow(_acc_", n.name, ")");
  }
  for (ir::NodeId m : loop.members) {
    const ir::Node& n = g.node(m);
    if (n.kind == ir::NodeKind::kCumConcat && s.after[m.index])
      w.line("_acc_", n.name, " = ", search, ".follow(_acc_", n.name, ")");
  }
}

// A loop over a new axis (with its loop_end): at most max_len frames, until
// every sequence ended (_Search); a loop with a choice over an existing axis:
// its frames, each sequence's hypotheses ending after its last one. With a choice, each frame
// computes what does not depend on the choice, chooses (the beams of this frame's hypotheses), then
// lets every value of the hypotheses before the choice that is read later follow its hypothesis
// (the states' next values, the cached frames of cum_concat, stacked frames), and computes the
// rest.
void write_search_loop(CodeWriter& w, const ir::Graph& g, const ir::DimTable& t,
                       const ir::LoopAnalysis& loops, size_t id) {
  const ir::Loop& loop = loops.loops[id];
  const std::string search = absl::StrCat("_search", id), frame = absl::StrCat("_t", id);
  const bool beam = loop.choice.valid();
  w.line("# loop ", id, " over ", t.id(*loop.axis), ", until each ",
         beam ? "hypothesis" : "sequence", " ends", beam ? " (beam search)" : "");
  w.line(search, " = _Search(", beam ? "beam_size, length_normalization" : "", ")");
  std::vector<std::string> states, nexts;
  write_loop_prologue(w, g, t, loops, loop, states, nexts);
  const ChoiceSplit s = split_at_choice(g, loops, id);
  // Over an existing axis (time-synchronous search): its frames, each
  // sequence's hypotheses ending with its length.
  const bool over_axis = !loop.end.valid();
  auto body = over_axis ? w.block("for ", frame, " in range(_frames(", t.id(*loop.axis), ")):")
                        : w.block("for ", frame, " in range(int(",
                                  g.node(g.node(loop.end).inputs[1]).name, ".raw_tensor)):");
  auto emit = [&](const ir::Node& n) {
    if (n.kind != ir::NodeKind::kLoopEnd) write_assignment(w, g, t, n);
  };
  for (ir::NodeId m : loop.members) {
    const ir::Node& n = g.node(m);
    if (n.kind != ir::NodeKind::kLoopState && !s.after[m.index]) emit(n);
  }
  if (beam) {
    emit(g.node(loop.choice));
    write_follow(w, g, loops, loop, s, search);
  }
  for (ir::NodeId m : loop.members) {
    const ir::Node& n = g.node(m);
    if (s.after[m.index] && n.kind != ir::NodeKind::kChoice) emit(n);
  }
  if (over_axis)
    w.line(search, ".end_at_length(", t.id(*loop.axis), ", ", frame, ")");
  else
    w.line(search, ".end(", g.node(g.node(loop.end).inputs[0]).name, ", ", frame, ")");
  for (ir::NodeId m : loop.members) {
    if (!loops.stacked[m.index]) continue;
    const std::string& name = g.node(m).name;
    w.line("_frames_of_", name, " = ", search, ".follow_all(_frames_of_", name, ") + [", name, "]");
  }
  write_next_states(w, states, nexts);
  auto ended = w.block("if ", search, ".all_ended():");
  w.line("break");
}

// One loop as a Python for-loop over its axis's frames (in this batch: the
// longest sequence's): the states start at their initial values, the body
// runs in graph order, stacked values collect their frames, and the states
// take their next values at the end of each frame. As on TF, frames past a
// sequence's end are computed too and ignored by what reads the stack.
void write_loop(CodeWriter& w, const ir::Graph& g, const ir::DimTable& t,
                const ir::LoopAnalysis& loops, size_t id) {
  const ir::Loop& loop = loops.loops[id];
  if (loop.end.valid() || loop.choice.valid()) return write_search_loop(w, g, t, loops, id);
  w.line("# loop ", id, " over ", t.id(*loop.axis));
  std::vector<std::string> states, nexts;
  write_loop_prologue(w, g, t, loops, loop, states, nexts);
  auto body = w.block("for _t", id, " in range(_frames(", t.id(*loop.axis), ")):");
  for (ir::NodeId m : loop.members) {
    const ir::Node& n = g.node(m);
    if (n.kind != ir::NodeKind::kLoopState) write_assignment(w, g, t, n);
  }
  for (ir::NodeId m : loop.members) {
    if (loops.stacked[m.index])
      w.line("_frames_of_", g.node(m).name, ".append(", g.node(m).name, ")");
  }
  write_next_states(w, states, nexts);
}

// Whether node `m` is in a branch of cond `id`.
bool in_branch(const ir::Node& m, int64_t id) {
  const int64_t* c = m.attrs.find<ir::attr::Cond>();
  return c && *c == id && m.attrs.find<ir::attr::Branch>();
}

// The step stage's order: what is written, and what is ready to be.
struct StepOrder {
  const ir::Graph& g;
  const ir::LoopAnalysis& loops;
  std::vector<bool> done, loop_done;
  bool ready(ir::NodeId in) const {
    const int32_t l = loops.loop_of[in.index];
    return l >= 0 ? loop_done[l] : done[in.index] || g.node(in).stage != ir::Stage::kStep;
  }
};

// A cond node `i` as a Python if (only the branch the condition picks
// runs), once everything its branches read from outside is computed;
// returns whether it wrote it.
bool write_cond(CodeWriter& w, const ir::DimTable& t, StepOrder& o, size_t i) {
  const ir::Graph& g = o.g;
  const ir::Node& n = g.nodes()[i];
  const int64_t id = n.attrs.get<ir::attr::Cond>();
  std::array<std::vector<size_t>, 2> members;
  for (size_t j = 0; j < i; ++j) {
    const ir::Node& m = g.nodes()[j];
    if (m.stage == ir::Stage::kStep && in_branch(m, id))
      members[m.attrs.get<ir::attr::Branch>()].push_back(j);
  }
  bool ready = o.ready(n.inputs[0]);
  for (int k = 0; k < 2; ++k) {
    for (size_t j : members[k]) {
      for (ir::NodeId in : g.nodes()[j].inputs) {
        if (!in_branch(g.node(in), id) && !o.ready(in)) ready = false;
      }
    }
    if (!in_branch(g.node(n.inputs[1 + k]), id) && !o.ready(n.inputs[1 + k])) ready = false;
  }
  if (!ready) return false;
  for (int k = 0; k < 2; ++k) {
    auto branch =
        k == 0 ? w.block("if bool(", g.node(n.inputs[0]).name, ".raw_tensor):") : w.block("else:");
    for (size_t j : members[k]) {
      write_assignment(w, g, t, g.nodes()[j]);
      o.done[j] = true;
    }
    w.line(n.name, " = ", g.node(n.inputs[1 + k]).name);
  }
  return o.done[i] = true;
}

}  // namespace

// Every step node once its inputs are, each loop as one block once all its
// inputs from outside are, each cond with its branches. The nodes of a
// gradient-checkpointed module (ir::Checkpoint) are written in RETURNN's
// `with rf.gradient_checkpoint_scope():`, one block for each run of them
// (a scope recomputes what was made in it; Python's `with` keeps the names).
void write_step_code(CodeWriter& w, const ir::Graph& g, const ir::DimTable& t,
                     const ir::LoopAnalysis& loops) {
  StepOrder o{g, loops, std::vector<bool>(g.size(), false),
              std::vector<bool>(loops.loops.size(), false)};
  auto ready = [&](ir::NodeId in) { return o.ready(in); };
  // The checkpoint a node is in (the first that holds it), or -1.
  auto checkpoint_of = [&](const ir::Node& n) {
    for (size_t c = 0; c < g.checkpoints().size(); ++c) {
      if (ir::in_checkpoint(g.checkpoints()[c], n.module_path)) return static_cast<int>(c);
    }
    return -1;
  };
  // The open gradient_checkpoint_scope block (a unique_ptr, not an optional:
  // g++ 12 warns of an uninitialized Scope in optional's destructor).
  std::unique_ptr<CodeWriter::Scope> scope;
  int scope_of = -1;  // and the checkpoint it is for
  // A checkpointed module's values are dropped (`del`) after their last use,
  // so that no Python name keeps them alive for the backward pass (what the
  // scope does not store, it computes again). Only values whose every use is
  // a plain statement here, and that this code wrote (a step node outside
  // loops): not a mark or a mark's input (the losses read those after this
  // code), nothing a loop or a cond reads.
  // A plain statement here: a step node outside loops and conds.
  const auto plain = [&](ir::NodeId id) {
    const ir::Node& n = g.node(id);
    return n.stage == ir::Stage::kStep && loops.loop_of[id.index] < 0 &&
           n.kind != ir::NodeKind::kCond && !n.attrs.find<ir::attr::Branch>();
  };
  std::vector<int> uses(g.size(), 0);
  std::vector<bool> droppable(g.size(), !g.checkpoints().empty());
  for (size_t j = 0; j < g.size(); ++j) {
    const bool is_plain = plain(g.id_of(j));
    for (ir::NodeId in : g.nodes()[j].inputs) {
      ++uses[in.index];
      if (!is_plain) droppable[in.index] = false;
    }
  }
  for (const ir::Mark& m : g.marks()) {
    droppable[m.node.index] = false;
    for (ir::NodeId in : g.node(m.node).inputs) droppable[in.index] = false;
  }
  // The fusions (lower.h) of plain statements whose absorbed nodes nothing
  // else reads: one call, the absorbed nodes not written.
  std::vector<bool> marked(g.size(), false), absorbed(g.size(), false);
  for (const ir::Mark& m : g.marks()) marked[m.node.index] = true;
  std::vector<std::string> fused(g.size());
  for (size_t i = 0; i < g.size(); ++i) {
    if (!plain(g.id_of(i))) continue;
    std::optional<Fusion> f = fusion(g, t, g.nodes()[i]);
    if (!f) continue;
    bool only_here = true;
    for (ir::NodeId a : f->absorbed)
      only_here = only_here && uses[a.index] == 1 && !marked[a.index] && !absorbed[a.index] &&
                  fused[a.index].empty() && plain(a);
    if (!only_here) continue;
    for (ir::NodeId a : f->absorbed) absorbed[a.index] = true;
    fused[i] = std::move(f->value);
  }
  for (bool progress = true; progress;) {
    progress = false;
    for (size_t i = 0; i < g.size(); ++i) {
      const ir::Node& n = g.nodes()[i];
      if (n.stage != ir::Stage::kStep || o.done[i]) continue;
      if (n.attrs.find<ir::attr::Branch>()) continue;      // written with its cond
      if (n.kind == ir::NodeKind::kParamAssign) continue;  // written last, below
      if (n.kind == ir::NodeKind::kCond) {
        scope.reset();
        progress |= write_cond(w, t, o, i);
        continue;
      }
      const int32_t l = loops.loop_of[i];
      if (l < 0) {
        if (!std::all_of(n.inputs.begin(), n.inputs.end(), ready)) continue;
        if (absorbed[i]) {  // written by the fusion that reads it
          o.done[i] = progress = true;
          continue;
        }
        // A scope per run of one checkpointed module's nodes.
        if (const int c = checkpoint_of(n); c != scope_of || (c >= 0 && !scope)) {
          scope.reset();
          scope_of = c;
          if (c >= 0)
            scope = std::make_unique<CodeWriter::Scope>(
                w.block("with rf.gradient_checkpoint_scope():"));
        }
        if (!fused[i].empty())
          w.line(n.name, " = ", fused[i]);
        else
          write_assignment(w, g, t, n);
        o.done[i] = progress = true;
        std::vector<std::string> dead;
        for (ir::NodeId in : n.inputs) {
          const ir::Node& v = g.node(in);
          if (--uses[in.index] == 0 && droppable[in.index] && !absorbed[in.index] &&
              v.stage == ir::Stage::kStep && loops.loop_of[in.index] < 0 && checkpoint_of(v) >= 0 &&
              std::find(dead.begin(), dead.end(), v.name) == dead.end())
            dead.push_back(v.name);
        }
        if (!dead.empty()) w.line("del ", absl::StrJoin(dead, ", "));
        continue;
      }
      scope.reset();
      // A loop: ready when every member's input from outside it is.
      bool loop_ready = true;
      for (ir::NodeId m : loops.loops[l].members) {
        for (ir::NodeId in : g.node(m).inputs) {
          if (loops.loop_of[in.index] != l && !ready(in)) loop_ready = false;
        }
      }
      if (!loop_ready) continue;
      write_loop(w, g, t, loops, l);
      for (ir::NodeId m : loops.loops[l].members) o.done[m.index] = true;
      o.loop_done[l] = progress = true;
    }
  }
  // The param assignments, after every read of their params, in training only.
  scope.reset();
  const auto is_assign = [](const ir::Node& n) { return n.kind == ir::NodeKind::kParamAssign; };
  if (std::none_of(g.nodes().begin(), g.nodes().end(), is_assign)) return;
  auto train = w.block("if rf.get_run_ctx().train_flag:");
  for (const ir::Node& n : g.nodes())
    if (is_assign(n)) write_assignment(w, g, t, n);
}

}  // namespace retc::emit::torch
