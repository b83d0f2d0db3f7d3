// Node kinds, listed once. Everything that must know every kind (names,
// printer, type inference, emitter) switches over NodeKind without a
// `default:`, so the compiler finds each place a new kind must be handled.
#pragma once

#include <optional>

#include "absl/strings/string_view.h"

namespace retc::ir {

// X(Enumerator, "text name"), with what the node computes as a comment.
#define RETC_FOR_EACH_NODE_KIND(X)                                                             \
  X(Data, "data")   /* extern data; attr key */                                                \
  X(Param, "param") /* current value of a param; attr param */                                 \
  X(Add, "add")     /* elementwise, broadcasting by dim */                                     \
  X(Sub, "sub")                                                                                \
  X(Mul, "mul")                                                                                \
  X(Dot, "dot")                 /* contraction; attr reduce (dims) */                          \
  X(Activation, "activation")   /* attr func */                                                \
  X(Dropout, "dropout")         /* training only; attrs rate, axes (mask varies) */            \
  X(Lstm, "lstm")               /* x, W, W_re, b; attrs axis, out_dim */                       \
  X(CrossEntropy, "softmax_ce") /* logits, sparse targets */                                   \
  X(Div, "div")                                                                                \
  X(Norm, "norm")                      /* L2 norm over attr axes */                            \
  X(Random, "random")                  /* seeded; attrs shape, distribution, ... */            \
  X(Constant, "constant")              /* attrs value, shape */                                \
  X(WeightNorm, "weight_norm")         /* parametrization of a param; axes */                  \
  X(WeightDropout, "weight_dropout")   /* parametrization; rate */                             \
  X(WeightNoise, "weight_noise")       /* parametrization; stddev */                           \
  X(ScaleGrad, "scale_grad")           /* identity forward; gradient times attr scale */       \
  X(Reduce, "reduce")                  /* attrs mode, axes */                                  \
  X(Normalize, "normalize")            /* (x - mean) / sqrt(var + epsilon) over axes */        \
  X(Gather, "gather")                  /* x, sparse indices into attr axis */                  \
  X(Concat, "concat")                  /* a, b along axis_a, axis_b into out_dim */            \
  X(Softmax, "softmax")                /* over attr axis; attr log */                          \
  X(SelfAttention, "self_attention")   /* x, qkv weight[, rel-pos table]; axis, heads, ... */  \
  X(Conv, "conv")                      /* x, W [kernels..., in/groups, out], b; see infer */   \
  X(RegressionLoss, "regression_loss") /* prediction, dense target data; attr mode */          \
  X(Slice, "slice")                    /* [start, start+|out_dim|) of attr axis */             \
  X(SplitDims, "split_dims")           /* attr axis into attr dims (sizes multiply) */         \
  X(MergeDims, "merge_dims")           /* attr axes into attr out_dim */                       \
  X(Pool, "pool")                      /* attrs mode, axes, out_axes, size, strides */         \
  X(BatchNorm, "batch_norm")           /* x, mean, var, scale, bias; attr axis */              \
  X(CtcLoss, "ctc_loss")               /* logits (classes + blank), sparse target data */      \
  X(ShiftAxis, "shift_axis")           /* shift along attr axis by amount, zero padded */      \
  X(SeqMask, "seq_mask")               /* frames past the length along axis set to value */    \
  X(PosEncoding, "pos_encoding")       /* x + sinusoidal position signal along attr axis */    \
  X(CustomLoss, "custom_loss")         /* any value as a loss, summed over frames */           \
  X(LoopUnstack, "loop_unstack")       /* loop attr loop: the current frame of x along axis */ \
  X(LoopState, "loop_state")           /* loop: a state's previous value; input: initial */    \
  X(LoopNext, "loop_next")             /* loop: (state, value): the state's next value */      \
  X(LoopStack, "loop_stack")           /* after loop: a value's frames stacked along axis */   \
  X(Range, "range")                    /* 0, 1, ... along attr dim (dynamic: input x) */       \
  X(Compare, "compare")                /* a op b elementwise (attr op), bool */                \
  X(Cast, "cast")                      /* x as attr dtype (dense) */                           \
  X(Where, "where")                    /* cond ? a : b elementwise (both evaluated) */         \
  X(TrainFlag, "train_flag")           /* scalar bool: training or not */

enum class NodeKind {
#define RETC_X(E, S) k##E,
  RETC_FOR_EACH_NODE_KIND(RETC_X)
#undef RETC_X
};

absl::string_view node_kind_name(NodeKind k);
std::optional<NodeKind> parse_node_kind(absl::string_view s);

}  // namespace retc::ir
