// Node kinds, listed once, with the facts every pass and target reads about
// them (arity, stage class, loss, target input), as XLA's opcode list
// carries arity and MLIR's ops carry traits. Everything that must know every
// kind (names, type inference, each target's lowering) switches over
// NodeKind without a `default:`; the build has -Werror=switch, so a new kind
// that some switch does not handle fails the build.
//
// Adding an elementwise binary op (like `minimum`): one RETC_X line in
// RETC_FOR_EACH_BINARY_KIND below, its nn:: function in compiler/nn/tensor.h,
// and one line in emit::combine_kind (emit/config.cc), RETURNN's name for it.
#pragma once

#include <optional>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "ir/attrs.h"

namespace retc::ir {

/// When a node of a kind may be evaluated (DESIGN.md, "Stages").
enum class StageClass {
  /// Depends on its inputs only: in stage param-init when all its users are
  /// (then it computes an initial value once).
  kAny,
  /// Always in stage step: it reads data, a param's current value, the train
  /// flag, sequence lengths, or is a loss or loop construct.
  kStep,
};

/// The facts of one kind. Built with chained constexpr setters in the kind
/// list: `KindFacts(2).pure()`, `KindFacts(2).step().loss(1)`.
struct KindFacts {
  /// The text name (printer, parser, messages).
  absl::string_view name;
  /// The number of inputs; kVariadic: the kind's type rule checks it.
  static constexpr int kVariadic = -1;
  int arity = 0;
  StageClass stage = StageClass::kStep;
  /// For kStep kinds: what a param-init node reading one would do, for the
  /// verifier's message ("a param-init node may not <reason>").
  absl::string_view step_reason = "read a step node";
  bool is_loss = false;
  /// A loss that reads a target: the input index of the target; -1: none.
  int target_input = -1;

  constexpr explicit KindFacts(int n) : arity(n) {}
  constexpr KindFacts named(absl::string_view s) const {
    KindFacts f = *this;
    f.name = s;
    return f;
  }
  constexpr KindFacts pure() const {
    KindFacts f = *this;
    f.stage = StageClass::kAny;
    return f;
  }
  constexpr KindFacts step(absl::string_view reason = "read a step node") const {
    KindFacts f = *this;
    f.stage = StageClass::kStep;
    f.step_reason = reason;
    return f;
  }
  constexpr KindFacts loss(int target = -1) const {
    KindFacts f = *this;
    f.is_loss = true;
    f.target_input = target;
    return f;
  }
};

// Elementwise binary ops: two dense inputs of one dtype (bool for the logical
// ones, else not bool), broadcasting by dim identity; pure.
// X(Enumerator, "text name", facts), as in the full list.
#define RETC_BINARY KindFacts(2).pure()
#define RETC_FOR_EACH_BINARY_KIND(X)        \
  X(Add, "add", RETC_BINARY)                \
  X(Sub, "sub", RETC_BINARY)                \
  X(Mul, "mul", RETC_BINARY)                \
  X(Div, "div", RETC_BINARY)                \
  X(FloorDiv, "floor_div", RETC_BINARY)     \
  X(Mod, "mod", RETC_BINARY)                \
  X(Pow, "pow", RETC_BINARY)                \
  X(Minimum, "minimum", RETC_BINARY)        \
  X(Maximum, "maximum", RETC_BINARY)        \
  X(LogicalAnd, "logical_and", RETC_BINARY) \
  X(LogicalOr, "logical_or", RETC_BINARY)

// The other kinds: X(Enumerator, "text name", facts, attributes), with what
// the node computes as a comment. Attributes (attrs.h): R(Tag) required,
// O(Tag) optional; every kind may also carry cond and branch (the nn::cond
// branch it is computed in). The verifier checks nodes against this.
// clang-format off
#define RETC_FOR_EACH_NONBINARY_KIND(X)                                                            \
  X(Data, "data", KindFacts(0).step("read data"),                                                  \
    R(Key))                                                                                        \
    /* extern data; attr key */                                                                    \
  X(Param, "param", KindFacts(0).step("read a param's current value"))                             \
    /* attr param */                                                                               \
  X(Dot, "dot", KindFacts(2).pure(),                                                               \
    R(Reduce))                                                                                     \
    /* contraction; attr reduce (dims) */                                                          \
  X(Activation, "activation", KindFacts(1).pure(),                                                 \
    R(Func))                                                                                       \
    /* attr func */                                                                                \
  X(Dropout, "dropout", KindFacts(1).step("depend on the train flag (dropout)"),                   \
    R(Rate) R(Axes))                                                                               \
    /* training only; attrs rate, axes */                                                          \
  X(Lstm, "lstm", KindFacts(KindFacts::kVariadic).step(),                                          \
    R(Axis) R(OutDim) R(Direction))                                                                \
    /* x, W, W_re, b[, h0, c0]; axis */                                                            \
  X(CrossEntropy, "softmax_ce", KindFacts(2).step().loss(1),                                       \
    O(Normalize) O(Scale) O(LabelSmoothing) O(FocalLossFactor))                                    \
    /* logits, sparse targets */                                                                   \
  X(Norm, "norm", KindFacts(1).pure(),                                                             \
    R(Axes))                                                                                       \
    /* L2 norm over attr axes */                                                                   \
  X(Random, "random", KindFacts(0).pure(),                                                         \
    R(Shape) R(Distribution) O(Minval) O(Maxval) O(Mean) O(Stddev) R(Seed))                        \
    /* seeded; attrs shape, distribution, ... */                                                   \
  X(FreshRandom, "fresh_random",                                                                   \
    KindFacts(KindFacts::kVariadic).step("draw fresh random numbers (initial values use seeded ones)"), \
    R(Shape) R(Distribution) O(Minval) O(Maxval) O(Mean) O(Stddev))                                \
    /* new numbers at every step (and frame); attrs as random's, no seed; inputs: the sizes of */  \
    /* its batch and dynamic dims (and, in a loop, the frame) */                                   \
  X(Constant, "constant", KindFacts(KindFacts::kVariadic).pure(),                                  \
    R(Value) R(Shape))                                                                             \
    /* attrs value, shape; inputs: sizes of its dynamic dims */                                    \
  X(WeightNorm, "weight_norm", KindFacts(1).step("read a param's current (reparametrized) value"), \
    R(Axes))                                                                                       \
    /* parametrization */                                                                          \
  X(WeightDropout, "weight_dropout",                                                               \
    KindFacts(1).step("depend on the train flag (weight dropout or noise)"),                       \
    R(Rate))                                                                                       \
    /* rate */                                                                                     \
  X(WeightNoise, "weight_noise",                                                                   \
    KindFacts(1).step("depend on the train flag (weight dropout or noise)"),                       \
    R(Stddev))                                                                                     \
    /* stddev */                                                                                   \
  X(ScaleGrad, "scale_grad", KindFacts(1).step(),                                                  \
    R(Scale))                                                                                      \
    /* identity forward; gradient times scale */                                                   \
  X(Reduce, "reduce", KindFacts(1).pure(),                                                         \
    R(Mode) R(Axes))                                                                               \
    /* attrs mode, axes */                                                                         \
  X(Normalize, "normalize", KindFacts(1).pure(),                                                   \
    R(Axes) R(Epsilon))                                                                            \
    /* (x - mean) / sqrt(var + epsilon) */                                                         \
  X(Gather, "gather", KindFacts(2).pure(),                                                         \
    R(Axis))                                                                                       \
    /* x, sparse indices into attr axis */                                                         \
  X(Concat, "concat", KindFacts(2).pure(),                                                         \
    R(AxisA) R(AxisB) R(OutDim))                                                                   \
    /* a, b along axis_a, axis_b into out_dim */                                                   \
  X(Softmax, "softmax", KindFacts(1).pure(),                                                       \
    R(Axis) R(Log))                                                                                \
    /* over attr axis; attr log */                                                                 \
  X(SelfAttention, "self_attention", KindFacts(KindFacts::kVariadic).step(),                       \
    R(Axis) R(NumHeads) R(KeyDim) R(OutDim) R(Causal) O(AttDropout) O(Clipping))                   \
    /* x, qkv weight[, rel-pos table] */                                                           \
  X(Conv, "conv", KindFacts(3).step(),                                                             \
    R(Axes) R(OutAxes) R(Strides) R(Dilation) R(Padding) R(Groups))                                \
    /* x, W [kernels..., in/groups, out], b */                                                     \
  X(RegressionLoss, "regression_loss", KindFacts(2).step().loss(1),                                \
    O(Normalize) O(Scale) R(Mode))                                                                 \
    /* pred, target; mode */                                                                       \
  X(Slice, "slice", KindFacts(1).pure(),                                                           \
    R(Axis) R(Start) R(OutDim))                                                                    \
    /* [start, start+|out_dim|) of attr axis */                                                    \
  X(SplitDims, "split_dims", KindFacts(1).pure(),                                                  \
    R(Axis) R(DimsAttr))                                                                           \
    /* attr axis into attr dims */                                                                 \
  X(MergeDims, "merge_dims", KindFacts(1).pure(),                                                  \
    R(Axes) R(OutDim))                                                                             \
    /* attr axes into attr out_dim */                                                              \
  X(Pool, "pool", KindFacts(1).step(),                                                             \
    R(Mode) R(Axes) R(OutAxes) R(Size) R(Strides) R(Padding))                                      \
    /* attrs mode, axes, out_axes, size, ... */                                                    \
  X(BatchNorm, "batch_norm", KindFacts(5).step(),                                                  \
    R(Axis) R(Epsilon) R(Momentum) O(Unmasked))                                                    \
    /* x, mean, var, scale, bias; attr axis; unmasked: statistics over padding too */             \
  X(CtcLoss, "ctc_loss", KindFacts(2).step().loss(1),                                              \
    O(Normalize) O(Scale) R(Axis))                                                                 \
    /* logits (classes + blank), targets */                                                        \
  X(ShiftAxis, "shift_axis", KindFacts(1).step(),                                                  \
    R(Axis) R(Amount) O(PadValue))                                                                 \
    /* shift along axis by amount, zero padded */                                                  \
  X(SeqMask, "seq_mask", KindFacts(1).step(),                                                      \
    R(Axis) R(Value))                                                                              \
    /* frames past the length set to value */                                                      \
  X(PosEncoding, "pos_encoding", KindFacts(1).step(),                                              \
    O(Loop) R(Axis))                                                                               \
    /* x + sinusoidal position signal */                                                           \
  X(CustomLoss, "custom_loss", KindFacts(1).step().loss(),                                         \
    O(Scale) O(AsError) O(Normalize))                                                              \
    /* any value, summed over frames */                                                            \
  X(LoopUnstack, "loop_unstack", KindFacts(1).step(),                                              \
    R(Loop) R(Axis))                                                                               \
    /* loop: the current frame of x */                                                             \
  X(LoopState, "loop_state", KindFacts(1).step(),                                                  \
    R(Loop) R(Axis) R(DimsAttr))                                                                   \
    /* loop: a state's previous value; initial */                                                  \
  X(LoopNext, "loop_next", KindFacts(2).step(),                                                    \
    R(Loop))                                                                                       \
    /* loop: (state, value): the next value */                                                     \
  X(LoopStack, "loop_stack", KindFacts(1).step(),                                                  \
    R(Loop) R(Axis))                                                                               \
    /* after loop: frames stacked along axis */                                                    \
  X(Range, "range", KindFacts(KindFacts::kVariadic).pure(),                                        \
    R(DimAttr))                                                                                    \
    /* 0, 1, ... along attr dim */                                                                 \
  X(Compare, "compare", KindFacts(2).pure(),                                                       \
    R(Op))                                                                                         \
    /* a op b elementwise (attr op), bool */                                                       \
  X(Cast, "cast", KindFacts(1).pure(),                                                             \
    R(DType) O(SparseDim))                                                                         \
    /* x as attr dtype: dense, or with attr sparse_dim int indices into it (for gather) */         \
  X(Where, "where", KindFacts(3).pure())                                                           \
    /* cond ? a : b (both evaluated) */                                                            \
  X(TrainFlag, "train_flag", KindFacts(0).step("depend on the train flag"))                        \
    /* scalar bool */                                                                              \
  X(TrainStep, "train_step", KindFacts(0).step("read the global train step"))                      \
    /* scalar int64 */                                                                             \
  X(MaskedSelect, "masked_select", KindFacts(2).step(),                                            \
    R(Axis) R(OutDim))                                                                             \
    /* x, mask: the frames along attr axis where mask (within the lengths), packed into attr */    \
    /* out_dim */                                                                                  \
  X(RangeOfLengths, "range_of_lengths", KindFacts(1).step(),                                       \
    R(OutDim))                                                                                     \
    /* lengths (int32 [B]): the positions 0, 1, ... of the new dynamic attr out_dim, whose */     \
    /* lengths they are: int32 [out_dim] */                                                        \
  X(Scatter, "scatter", KindFacts(2).step(),                                                       \
    R(Axis) R(Mode) R(Value))                                                                      \
    /* x, indices sparse over the out dim: x's frames along attr axis added (attr mode sum) or */  \
    /* their max / min taken into the out dim at the indices; frames past axis's lengths and */   \
    /* indices outside the out dim write nothing; entries nothing writes are attr value */        \
  X(Length, "length", KindFacts(1).step("read sequence lengths"),                                  \
    R(Axis))                                                                                       \
    /* of x along attr axis: int32 [B] */                                                          \
  X(LoopEnd, "loop_end", KindFacts(2).step(),                                                      \
    R(Loop) R(Axis))                                                                               \
    /* loop over a new axis: (done, max_len): a sequence ends after the frame where done; at */    \
    /* most max_len frames */                                                                      \
  X(Choice, "choice", KindFacts(1).step(),                                                         \
    R(Loop) R(DimAttr))                                                                            \
    /* loop, search only: the labels over attr dim that the beam search keeps (log-probs in); */   \
    /* states follow their beams */                                                                \
  X(CumConcat, "cum_concat", KindFacts(1).step(),                                                  \
    R(Loop) R(Axis) R(OutDim))                                                                     \
    /* loop: x's frames so far along attr out_dim */                                               \
  X(LstmFinal, "lstm_final", KindFacts(1).step(),                                                  \
    R(State))                                                                                      \
    /* an lstm's state (attr state: h or c) after each sequence's last frame */                    \
  X(Cond, "cond", KindFacts(3).step(),                                                             \
    R(Cond))                                                                                       \
    /* (pred, then, else): computes only the branch pred picks; the nodes with attrs cond = */     \
    /* this one's, branch 0 (then) or 1 (else) */                                                  \
  X(TransposedConv, "transposed_conv", KindFacts(KindFacts::kVariadic).step(),                     \
    R(Axes) R(OutAxes) R(Strides) R(Padding))                                                      \
    /* x, W [kernels..., out, in][, b [out]]: attr axes upsampled by their strides */              \
  X(ReplaceDim, "replace_dim", KindFacts(KindFacts::kVariadic).step(),                             \
    R(Axis) R(OutDim))                                                                             \
    /* x[, like]: x's attr axis becomes attr out_dim (a dim of like: its lengths; without like */  \
    /* a static one of the same size, or a new dynamic one with the axis's lengths); frames */     \
    /* past the new lengths become padding */                                                      \
  X(LogicalNot, "logical_not", KindFacts(1).pure())                                                \
    /* not x (bool) */                                                                             \
  X(Cumsum, "cumsum", KindFacts(1).pure(),                                                         \
    R(Axis))                                                                                       \
    /* running sum along attr axis */                                                              \
  X(TopK, "top_k", KindFacts(1).pure(),                                                            \
    R(Axis) R(KDim) R(Indices))                                                                    \
    /* the k largest along static attr axis into attr k_dim, descending: values, or with attr */   \
    /* indices their int32 indices */                                                              \
  X(Pad, "pad", KindFacts(1).pure(),                                                               \
    R(Axis) R(Left) R(Right) R(Value) R(OutDim))                                                   \
    /* attr axis padded by left / right frames of value into attr out_dim (a dynamic axis: */      \
    /* after each sequence's end) */                                                               \
  X(Stack, "stack", KindFacts(KindFacts::kVariadic).pure(),                                        \
    R(OutDim))                                                                                     \
    /* inputs of one type stacked along the new static attr out_dim (its size: their number), */   \
    /* last */                                                                                     \
  X(Window, "window", KindFacts(1).step(),                                                         \
    R(Axis) R(WindowDim) R(OutAxis) R(Stride) R(Padding))                                          \
    /* the frames of attr axis around each (attr window_dim, after the axis; padding same: */      \
    /* centered, or valid), every attr stride-th into attr out_axis */                             \
  X(Repeat, "repeat", KindFacts(2).step(),                                                         \
    R(Axis) R(OutDim))                                                                             \
    /* x, repetitions (int32 over attr axis, or a scalar): each frame of attr axis that many */    \
    /* times, into the new dynamic attr out_dim */                                                 \
  X(RawLayer, "raw_layer", KindFacts(KindFacts::kVariadic).step(),                                 \
    R(Layer) R(LayerDims) R(OutDims) R(DType) O(SparseDim))                                        \
    /* a RETURNN TF layer retc does not know: attr layer (JSON; "$k": attr layer_dims[k]) on */    \
    /* the inputs, of the declared attrs out_dims, dtype[, sparse_dim] */                         \
  X(LogCumsumExp, "log_cumsum_exp", KindFacts(1).pure(),                                           \
    R(Axis))                                                                                       \
    /* running logsumexp along attr axis: y[t] = log(exp(x[0]) + ... + exp(x[t])) (floats) */   \
  X(EditDistance, "edit_distance", KindFacts(2).step("read sequence lengths"),                     \
    R(AxisA) R(AxisB))                                                                             \
    /* Levenshtein distance of labels a along attr axis_a and b along axis_b: [B] int32 */   \
  X(ParamAssign, "param_assign", KindFacts(2).step("assign a param"),                              \
    R(Mode))                                                                                       \
    /* (param, value): in a training step, after its every read of the param, the param */        \
    /* becomes value (attr mode assign) or param + value (add); a root; int32 [] (nothing) */
// clang-format on

#define RETC_FOR_EACH_NODE_KIND(X) \
  RETC_FOR_EACH_BINARY_KIND(X)     \
  RETC_FOR_EACH_NONBINARY_KIND(X)

enum class NodeKind {
#define RETC_X(E, S, F, ...) k##E,
  RETC_FOR_EACH_NODE_KIND(RETC_X)
#undef RETC_X
};

/// The elementwise binary ops, for a target's exhaustive switch.
enum class BinaryOp {
#define RETC_X(E, S, F, ...) k##E,
  RETC_FOR_EACH_BINARY_KIND(RETC_X)
#undef RETC_X
};

absl::string_view node_kind_name(NodeKind k);
std::optional<NodeKind> parse_node_kind(absl::string_view s);
const KindFacts& kind_facts(NodeKind k);

/// One attribute a kind takes (the kind list's R(Tag) / O(Tag)).
struct AttrDecl {
  AttrKey key;
  bool required;
};
/// The attributes `k` takes, in declaration order (cond and branch besides).
absl::Span<const AttrDecl> kind_attrs(NodeKind k);
/// OK, or InvalidArgument naming the kind and the first attribute that is
/// missing, undeclared or of the wrong type.
absl::Status check_attrs(NodeKind k, const Attrs& attrs);
/// The binary op of an elementwise binary kind; nullopt for other kinds.
std::optional<BinaryOp> binary_op(NodeKind k);

}  // namespace retc::ir
