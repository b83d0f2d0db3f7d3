// The torch target's two stages in Python (DESIGN.md, "Stages"): param-init
// once, in the model's constructor (Model.__init__: each param at its path,
// the initial values' subgraph, the params' options); the step stage at
// every step (train_step: the step code, the losses as RETURNN's run context
// wants them).
#pragma once

#include "emit/code_writer.h"
#include "ir/dim_table.h"
#include "ir/graph.h"
#include "ir/loops.h"

namespace retc::emit::torch {

/// `class Model(rf.Module)` with __init__ (the param-init stage), and
/// get_model. `hooked`: params have options applied by hooks
/// (_apply_param_options: decoupled weight decay, gradient clipping).
/// `initial_values`: false where a checkpoint sets every param (eval, forward,
/// search with RETURNN's `load`, which fails on a missing param): the stage's
/// values would be drawn only to be overwritten (seconds at a published
/// model's size), so the params keep rf's zeros until the checkpoint loads.
void write_model(CodeWriter& w, const ir::Graph& g, const ir::DimTable& t, bool hooked,
                 bool initial_values);

/// train_step's body for `g` (at the writer's indentation): the step stage,
/// the losses, the marked outputs as its result. `coupled`: a coupled weight
/// decay loss is added (_coupled_weight_decay).
void write_train_step_body(CodeWriter& w, const ir::Graph& g, const ir::DimTable& t,
                           const ir::LoopAnalysis& loops, bool coupled);

}  // namespace retc::emit::torch
