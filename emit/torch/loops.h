// The torch target's step code: every step node as a Python assignment in an
// order that respects the dataflow; each loop as one for-loop over its axis's
// frames (or, over a new axis, until every sequence or hypothesis ended: the
// search, _Search in helpers.py); each cond as a Python if.
#pragma once

#include "emit/code_writer.h"
#include "ir/dim_table.h"
#include "ir/graph.h"
#include "ir/loops.h"

namespace retc::emit::torch {

/// Writes the step stage of `g` at the writer's indentation (a function body).
void write_step_code(CodeWriter& w, const ir::Graph& g, const ir::DimTable& t,
                     const ir::LoopAnalysis& loops);

/// `name = value` for node `n` (a cum_concat also keeps its frames so far,
/// an LSTM whose final state is read its state).
void write_assignment(CodeWriter& w, const ir::Graph& g, const ir::DimTable& t, const ir::Node& n);

/// Whether an lstm_final node reads the LSTM node `n` (its state is kept).
bool has_final_state_reader(const ir::Graph& g, const ir::Node& n);

}  // namespace retc::emit::torch
