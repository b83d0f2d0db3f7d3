// The module library, all of it: include this in model code.
//
//   layers.h       Linear, Lstm, BLstm, LayerNorm, RmsNorm, Conv1d/Conv2d,
//                  BatchNorm, Dropout, Sequential, ModuleList, Embedding
//   attention.h    SelfAttention (plain, causal, relative-positional), CrossAttention
//   transformer.h  Transformer encoder and decoder layers and stacks
//   conformer.h    the Conformer encoder, its blocks and frontend
//   audio.h        log-mel features from raw audio (STFT, mel filterbank), SpecAugment
//   transducer.h   the transducer (RNN-T, RNA) loss
//
// Default initial values: per param kind (ir::default_initializer): weights
// Glorot uniform, biases zero, as in returnn_common. A module's params are
// attributed to the source line where the user registers the module
// (register_module or set_root).
#pragma once

#include "compiler/nn/attention.h"
#include "compiler/nn/audio.h"
#include "compiler/nn/conformer.h"
#include "compiler/nn/layers.h"
#include "compiler/nn/transducer.h"
#include "compiler/nn/transformer.h"
#include "compiler/nn/zoneout.h"
