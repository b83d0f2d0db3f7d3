// Attention modules: fused multi-head self-attention (plain, causal,
// relative-positional) and cross-attention over a memory.
#pragma once

#include <memory>
#include <optional>
#include <source_location>

#include "compiler/nn/layers.h"
#include "compiler/nn/loop.h"

namespace retc::nn {

/// Options of SelfAttention. Example:
/// `SelfAttentionOptions(model, model, model, 8).causal(true)`.
struct SelfAttentionOptions {
  SelfAttentionOptions(ir::Dim in_dim, ir::Dim key_dim, ir::Dim value_dim, int64_t num_heads)
      : in_dim_(in_dim), key_dim_(key_dim), value_dim_(value_dim), num_heads_(num_heads) {}
  RETC_ARG(ir::Dim, in_dim);
  RETC_ARG(ir::Dim, key_dim);
  RETC_ARG(ir::Dim, value_dim);
  RETC_ARG(int64_t, num_heads);
  /// Each frame attends to itself and earlier frames only.
  RETC_ARG(bool, causal) = false;
  /// > 0: relative positions up to this offset (see SelfAttention).
  RETC_ARG(int64_t, rel_pos_clipping) = 0;
  /// Dropout on the attention weights in training (elementwise).
  RETC_ARG(double, att_dropout) = 0.0;
  /// Dropout on the learned relative-position table (rel_pos_clipping > 0)
  /// in training: each entry of each offset's row, shared by every
  /// query-key pair of that offset (as ESPnet's and rf's dropout on their
  /// encodings per offset).
  RETC_ARG(double, rel_pos_dropout) = 0.0;
  /// A bias on the fused QKV projection (rf's with_bias; RETURNN's fused TF
  /// layer has none, so with it the attention is built from primitive ops).
  RETC_ARG(bool, qkv_bias) = false;
  /// Rotary position embeddings (RoPE, Su et al. 2021; rf's
  /// RotaryPosCausalSelfAttention): each head's queries and keys rotated by
  /// their frame's angles before the energies (see SelfAttention).
  RETC_ARG(bool, rotary) = false;
  /// The output projection's bias.
  RETC_ARG(bool, proj_bias) = true;
  /// The output projection's dim; default: in_dim.
  RETC_ARG(std::optional<ir::Dim>, out_dim);
};

/// The keys and values of earlier calls of SelfAttention::forward_with_cache,
/// handed to the next call (chunked or streaming processing: each chunk
/// attends to the chunks before it). One segment per call, each over a dim of
/// its own with that call's lengths; `frames`: the frames so far per sequence
/// (float32 [B]; undefined: none yet).
struct AttentionCache {
  struct Segment {
    /// [..., frames, heads, key/heads] (with rotary: rotated at their
    /// positions) and [..., frames, heads, value/heads].
    Tensor keys, values;
    ir::Dim frames;
    /// float32: the segment's first frame's position in each sequence.
    Tensor start;
  };
  std::vector<Segment> segments;
  Tensor frames;
};

/// Multi-head self-attention over a dynamic axis (RETURNN's fused layer),
/// plain or causal (each frame attends to itself and earlier frames), with
/// an output projection. Params: qkv [in, 2*key + value] (per head
/// [q | k | v], RETURNN's layout), qkv_bias [2*key + value] with
/// qkv_bias(true), proj.weight [value, out], proj.bias [out] (out: the
/// option out_dim, default in; no bias with proj_bias(false)). Energies are
/// scaled by 1/sqrt(key/heads), softmax over the keys within each
/// sequence's length, then dropout on the weights (att_dropout).
///
/// With `rel_pos_clipping` > 0, relative positions (Shaw et al. 2018, as in
/// RETURNN's Conformer): a learned table rel_pos [2*clipping + 1, key/heads]
/// of offsets -clipping..clipping (farther ones clipped) is added to the
/// keys per query-key offset.
///
/// With `rotary`, each head's query and key at frame t have their entry pairs
/// (2i, 2i + 1) rotated by the angle t * 10000^(-2i / (key/heads)) (the key
/// dim per head even; rf's RoPE: the same pairs, angles and numbers), so that
/// the energies depend on the frames' offset; from primitive ops, stepwise
/// too (the cached keys rotated at their own frame).
class SelfAttention : public Module {
 public:
  explicit SelfAttention(const SelfAttentionOptions& opts);
  Tensor forward(const Tensor& x, const ir::Dim& axis,
                 std::source_location loc = std::source_location::current()) const;
  /// One frame `x` of `loop` attending to the frames so far (causal; their
  /// keys and values cached with loop.cum_concat): frame t of a causal
  /// forward over the loop's axis, from the same params, for step-by-step
  /// decoding; with relative positions (rel_pos_clipping), each cached key
  /// shifted by the table's row of its offset to this frame.
  Tensor step(const Tensor& x, Loop& loop,
              std::source_location loc = std::source_location::current()) const;
  /// forward over `axis` as the continuation of each sequence whose earlier
  /// frames are in `cache`, and the cache with this call's frames added: each
  /// frame attends to every cached frame and to this call's frames (causal: up
  /// to itself), at positions after the cached ones (rotary, relative
  /// positions). Calls over consecutive chunks give the frames of one forward
  /// over the chunks concatenated per sequence (that sequence's length in
  /// each), from primitive ops on both targets, no concat over a dynamic axis.
  /// Example: `auto [y1, c1] = att->forward_with_cache(x1, t1);
  /// auto [y2, c2] = att->forward_with_cache(x2, t2, c1);`
  std::pair<Tensor, AttentionCache> forward_with_cache(
      const Tensor& x, const ir::Dim& axis, const AttentionCache& cache = {},
      std::source_location loc = std::source_location::current()) const;
  Parameter& qkv() { return qkv_; }
  const ir::Dim& out_dim() const { return proj->out_dim(); }
  std::shared_ptr<Linear> proj;

 private:
  // x . qkv (+ qkv_bias) split into heads: [..., heads, qkv_per_head].
  Tensor project_qkv(const Tensor& x, std::source_location loc) const;
  // With rotary: x [..., key_per_head] rotated at the frames `pos` (float).
  Tensor rotate(const Tensor& x, const Tensor& pos, std::source_location loc) const;
  ir::Dim in_dim_, key_dim_, value_dim_;
  int64_t num_heads_;
  bool causal_, rotary_;
  int64_t clipping_;
  double att_dropout_;
  // The fused QKV's per-head layout [q | k | v] (RETURNN's), the keys' axis
  // (forward with qkv_bias), and the cache's dim.
  ir::Dim heads_, key_per_head_, value_per_head_, qkv_per_head_, keys_, cached_;
  Parameter qkv_, qkv_bias_, rel_pos_;
  double rel_pos_dropout_;
  // The table, with rel_pos_dropout.
  Tensor rel_pos_table(Builder& b, std::source_location loc) const;
};

/// Learned relative positions as a module of their own (Shaw et al. 2018;
/// RETURNN's relative_positional_encoding layer, which SelfAttention's
/// rel_pos_clipping gives the fused layer as key_shift): for query frame i of
/// `query_axis` and key frame j of `key_axis`, row clip(j - i, -clipping,
/// clipping) + clipping of a learned table. Result over query_axis, key_axis
/// and dim. Params: table [2*clipping + 1, dim].
/// Example: `enc->forward(q, time, k, keys)`, then `nn::dot(q, enc, {dim})`.
class RelPosEncoding : public Module {
 public:
  RelPosEncoding(ir::Dim dim, int64_t clipping);
  Tensor forward(const Tensor& query, const ir::Dim& query_axis, const Tensor& keys,
                 const ir::Dim& key_axis,
                 std::source_location loc = std::source_location::current()) const;
  Parameter& table() { return table_; }

 private:
  ir::Dim dim_;
  int64_t clipping_;
  Parameter table_;
};

/// The sinusoidal relative-position encoding (Transformer-XL's; rf's
/// relative_positional_encoding, ESPnet's RelPositionalEncoding) per
/// query-key pair, without params: for query frame i of `query_axis` and
/// key frame j of `key_axis`, [sin((j - i) w_f) | cos((j - i) w_f)] over
/// `dim` (even; the sines first), w_f = 10000^(-2f / dim). Result over
/// query_axis, key_axis and dim. Example (a relative-position term of your
/// own attention): `nn::sinusoidal_rel_pos_encoding(q, time, k, keys,
/// Dim::feature("pos", 64))`, then a Linear and `nn::dot` with the queries.
Tensor sinusoidal_rel_pos_encoding(const Tensor& query, const ir::Dim& query_axis,
                                   const Tensor& keys, const ir::Dim& key_axis, const ir::Dim& dim,
                                   std::source_location loc = std::source_location::current());

/// Options of RelPosSelfAttention. Example:
/// `RelPosSelfAttentionOptions(model, model, model, 8).att_dropout(0.1)`.
struct RelPosSelfAttentionOptions {
  RelPosSelfAttentionOptions(ir::Dim in_dim, ir::Dim key_dim, ir::Dim value_dim, int64_t num_heads)
      : in_dim_(in_dim), key_dim_(key_dim), value_dim_(value_dim), num_heads_(num_heads) {}
  RETC_ARG(ir::Dim, in_dim);
  RETC_ARG(ir::Dim, key_dim);
  RETC_ARG(ir::Dim, value_dim);
  RETC_ARG(int64_t, num_heads);
  /// Dropout on the attention weights in training (elementwise).
  RETC_ARG(double, att_dropout) = 0.0;
  /// Biases of the fused QKV and of the output projection (rf's defaults).
  RETC_ARG(bool, qkv_bias) = true;
  RETC_ARG(bool, proj_bias) = true;
  /// The output projection's dim; default: in_dim.
  RETC_ARG(std::optional<ir::Dim>, out_dim);
  /// Dropout on the sinusoidal encodings in training (rf's pos_emb_dropout):
  /// then the encodings are made as a table over the offsets
  /// -(n-1) .. n-1 of each sequence of n frames (the mask drawn per sequence;
  /// rf draws one for the batch), projected by linear_pos and gathered at
  /// j - i; without it, folded into the query (below). Both give the same
  /// numbers in evaluation.
  RETC_ARG(double, rel_pos_dropout) = 0.0;
};

/// Transformer-XL-style relative-positional self-attention (Dai et al. 2019,
/// section 3.3; ESPnet's and RETURNN rf's RelPosSelfAttention, with its
/// defaults): the score of query i and key j is
///   ((q_i + pos_bias_u) . k_j + (q_i + pos_bias_v) . linear_pos(emb(j - i))) / sqrt(key/heads),
/// emb the sinusoidal encoding of the offset over in_dim features (rf's:
/// sin(d w_f) in the first half, cos(d w_f) in the second, w_f =
/// 10000^(-2f / in)); softmax over the keys (masked by the lengths), dropout
/// on the weights, the values' mix per head, the output projection. Computed
/// without the relative shift: sin and cos of j - i split into those of i and
/// j, so no [T, 2T - 1] table is made (with rel_pos_dropout: a table over the
/// offsets, gathered at j - i). Params: qkv.weight [in, 2*key + value]
/// (per head [q | k | v]) and qkv.bias, linear_pos.weight [in, key],
/// pos_bias_u and pos_bias_v [heads, key/heads] (Glorot), proj.
class RelPosSelfAttention : public Module {
 public:
  explicit RelPosSelfAttention(const RelPosSelfAttentionOptions& opts);
  Tensor forward(const Tensor& x, const ir::Dim& axis,
                 std::source_location loc = std::source_location::current()) const;
  Parameter& pos_bias_u() { return pos_bias_u_; }
  Parameter& pos_bias_v() { return pos_bias_v_; }
  std::shared_ptr<Linear> qkv, linear_pos, proj;

 private:
  ir::Dim in_dim_, key_dim_, value_dim_, heads_, key_per_head_, key_per_head_k_, value_per_head_,
      qkv_per_head_, keys_, pos_emb_, half_, half_s_, half_c_;
  double att_dropout_, rel_pos_dropout_;
  Parameter pos_bias_u_, pos_bias_v_;
};

/// Options of CrossAttention. Example:
/// `CrossAttentionOptions(model, enc, model, model, 8).fused_kv(true).qkv_bias(true)`
/// (rf's CrossAttention).
struct CrossAttentionOptions {
  CrossAttentionOptions(ir::Dim query_dim, ir::Dim memory_dim, ir::Dim key_dim, ir::Dim value_dim,
                        int64_t num_heads)
      : query_dim_(query_dim),
        memory_dim_(memory_dim),
        key_dim_(key_dim),
        value_dim_(value_dim),
        num_heads_(num_heads) {}
  RETC_ARG(ir::Dim, query_dim);
  RETC_ARG(ir::Dim, memory_dim);
  RETC_ARG(ir::Dim, key_dim);
  RETC_ARG(ir::Dim, value_dim);
  RETC_ARG(int64_t, num_heads);
  /// Dropout on the attention weights in training (elementwise).
  RETC_ARG(double, att_dropout) = 0.0;
  /// Biases of the query, key and value projections.
  RETC_ARG(bool, qkv_bias) = false;
  /// The output projection's bias.
  RETC_ARG(bool, proj_bias) = true;
  /// One key-value projection `kv` [memory, key + value], per head [k | v]
  /// (rf's layout), instead of `key` and `value`.
  RETC_ARG(bool, fused_kv) = false;
};

/// Multi-head attention of queries over a memory (encoder-decoder
/// attention), from primitive ops: energies q . k scaled by
/// 1/sqrt(key/heads), softmax over the memory axis within its lengths,
/// dropout on the weights in training (att_dropout), the values' mix, the
/// output projection. Params: query [query, key], key [memory, key] and
/// value [memory, value] (or kv, with fused_kv), each with a bias only with
/// qkv_bias(true); proj [value, query] with a bias unless proj_bias(false).
class CrossAttention : public Module {
 public:
  explicit CrossAttention(const CrossAttentionOptions& opts);
  /// CrossAttentionOptions(query_dim, memory_dim, key_dim, value_dim, num_heads).att_dropout(...).
  CrossAttention(ir::Dim query_dim, ir::Dim memory_dim, ir::Dim key_dim, ir::Dim value_dim,
                 int64_t num_heads, double att_dropout = 0.0);
  Tensor forward(const Tensor& x, const Tensor& memory, const ir::Dim& memory_axis,
                 std::source_location loc = std::source_location::current()) const;
  /// key and value (null with fused_kv), or kv (null without).
  std::shared_ptr<Linear> query, key, value, kv, proj;

 private:
  ir::Dim key_dim_, value_dim_, heads_, key_per_head_, value_per_head_, kv_per_head_;
  double att_dropout_;
};

}  // namespace retc::nn
