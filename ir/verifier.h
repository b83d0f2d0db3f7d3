// The IR verifier: structural invariants every graph satisfies between passes.
//
// Checks: inputs refer to earlier nodes (so the graph is acyclic); each
// node's stored type equals the type the factory infers now; stage rules (a
// param-init node never reads data, the train flag or a param's current
// value, nor any step node); params have unique, non-empty paths and at most
// one read node each; marks refer to existing nodes with unique names; node
// names that are set are unique; loops are well formed (ir/loops.h).
// Constants and seeded random nodes depend on nothing, so nodes of either
// stage may read them. The stage rule is the kind list's (KindFacts::stage),
// the one assign-stages follows: a node of a step-only kind is never in
// stage param-init.
#pragma once

#include "absl/status/status.h"
#include "ir/graph.h"

namespace retc::ir {

/// The stage rules alone (see above): a violation is the user's mistake
/// (e.g. an initializer computed from data), reported at their source line.
absl::Status verify_stage_rules(const Graph& g);

/// OK, or InvalidArgument naming the first offending node, its module and the
/// user's source line: `model.cc:42:7: error: node %3 (dot in 'enc'): ...`.
absl::Status verify(const Graph& g);

}  // namespace retc::ir
