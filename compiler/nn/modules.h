// The module library: Linear and LSTM (modules own params; stateless ops are
// functions in compiler/nn/tensor.h).
//
// Default initial values: per param kind (ir::default_initializer): weights
// Glorot uniform, biases zero, as in returnn_common. A module's params are attributed to the source
// line where the user registers the module (register_module or set_root).
#pragma once

#include <memory>
#include <source_location>

#include "absl/strings/string_view.h"
#include "compiler/nn/module.h"

namespace retc::nn {

/// y = x·W + b, contracting `in_dim`. Params: weight [in, out], bias [out].
/// Example: `auto lin = std::make_shared<nn::Linear>(hidden, classes);`
class Linear : public Module {
 public:
  Linear(ir::Dim in_dim, ir::Dim out_dim, bool with_bias = true);
  Tensor forward(const Tensor& x, std::source_location loc = std::source_location::current()) const;

  const ir::Dim& in_dim() const { return in_dim_; }
  const ir::Dim& out_dim() const { return out_dim_; }
  Parameter& weight() { return weight_; }
  Parameter& bias() { return bias_; }

 private:
  ir::Dim in_dim_, out_dim_;
  Parameter weight_, bias_;
  bool with_bias_;
};

/// A unidirectional LSTM over a spatial axis, run by RETURNN's fused native
/// kernel (NativeLstm2). Params, in RETURNN's gate layout:
/// ff_weight [in, 4*out], rec_weight [out, 4*out], bias [4*out].
/// Example: `auto y = lstm->forward(x, time);`
class Lstm : public Module {
 public:
  enum class Direction { kForward, kBackward };
  Lstm(ir::Dim in_dim, ir::Dim out_dim, Direction direction = Direction::kForward);
  Tensor forward(const Tensor& x, const ir::Dim& axis,
                 std::source_location loc = std::source_location::current()) const;

  const ir::Dim& in_dim() const { return in_dim_; }
  const ir::Dim& out_dim() const { return out_dim_; }
  Parameter& ff_weight() { return ff_weight_; }
  Parameter& rec_weight() { return rec_weight_; }
  Parameter& bias() { return bias_; }

 private:
  Tensor run(const Tensor& x, const ir::Dim& axis, const ir::SourceLoc& l) const;

  ir::Dim in_dim_, out_dim_;
  Direction direction_;
  Parameter ff_weight_, rec_weight_, bias_;
};

/// A bidirectional LSTM: a forward and a backward Lstm over the same axis,
/// concatenated; the output dim is fw_dim + bw_dim. Params: fw.*, bw.*.
class BLstm : public Module {
 public:
  BLstm(ir::Dim in_dim, ir::Dim fw_dim, ir::Dim bw_dim);
  Tensor forward(const Tensor& x, const ir::Dim& axis,
                 std::source_location loc = std::source_location::current()) const;
  /// fw_dim + bw_dim.
  ir::Dim out_dim() const { return out_dim_; }

  std::shared_ptr<Lstm> fw, bw;

 private:
  ir::Dim out_dim_;
};

/// Layer normalization over `dim`: (x - mean) / sqrt(var + eps) * scale + bias.
/// Params: scale [dim] (norm-scale, 1), bias [dim] (norm-shift, 0).
class LayerNorm : public Module {
 public:
  explicit LayerNorm(ir::Dim dim, double epsilon = 1e-6);
  Tensor forward(const Tensor& x, std::source_location loc = std::source_location::current()) const;
  Parameter& scale() { return scale_; }
  Parameter& bias() { return bias_; }

 private:
  ir::Dim dim_;
  double epsilon_;
  Parameter scale_, bias_;
};

/// RMS normalization over `dim`: x / sqrt(mean(x^2) + eps) * scale.
/// Params: scale [dim] (norm-scale, 1).
class RmsNorm : public Module {
 public:
  explicit RmsNorm(ir::Dim dim, double epsilon = 1e-6);
  Tensor forward(const Tensor& x, std::source_location loc = std::source_location::current()) const;
  Parameter& scale() { return scale_; }

 private:
  ir::Dim dim_;
  double epsilon_;
  Parameter scale_;
};

/// Multi-head self-attention over a dynamic axis (RETURNN's fused layer),
/// plain or causal (each frame attends to itself and earlier frames), with
/// an output projection. Params: qkv [in, 2*key + value] (queries, keys,
/// values in that order), proj.weight [value, in], proj.bias [in].
class SelfAttention : public Module {
 public:
  SelfAttention(ir::Dim in_dim, ir::Dim key_dim, ir::Dim value_dim, int64_t num_heads,
                bool causal = false);
  Tensor forward(const Tensor& x, const ir::Dim& axis,
                 std::source_location loc = std::source_location::current()) const;
  Parameter& qkv() { return qkv_; }
  std::shared_ptr<Linear> proj;

 private:
  ir::Dim in_dim_, key_dim_, value_dim_;
  int64_t num_heads_;
  bool causal_;
  Parameter qkv_;
};

/// 1-D convolution over a spatial axis with "same" padding (the axis keeps
/// its dim), stride 1 and an optional dilation; odd kernel sizes. Params:
/// weight [kernel, in, out] (fan_in = kernel * in), bias [out].
class Conv1d : public Module {
 public:
  Conv1d(ir::Dim in_dim, ir::Dim out_dim, int64_t kernel_size, int64_t dilation = 1);
  Tensor forward(const Tensor& x, const ir::Dim& axis,
                 std::source_location loc = std::source_location::current()) const;
  Parameter& weight() { return weight_; }
  Parameter& bias() { return bias_; }

 private:
  ir::Dim in_dim_, out_dim_;
  int64_t dilation_;
  Parameter weight_, bias_;
};

/// Modules registered as "0", "1", ...; iterate with size() and at().
class ModuleList : public Module {
 public:
  ModuleList() : Module("module_list") {}
  template <class M>
  std::shared_ptr<M> append(std::shared_ptr<M> m,
                            std::source_location loc = std::source_location::current()) {
    items_.push_back(m);
    return register_module(std::to_string(items_.size() - 1), std::move(m), loc);
  }
  size_t size() const { return items_.size(); }
  template <class M>
  std::shared_ptr<M> at(size_t i) const {
    return std::static_pointer_cast<M>(items_.at(i));
  }

 private:
  std::vector<std::shared_ptr<Module>> items_;
};

/// A pre-norm Transformer encoder layer:
///   h = x + dropout(self_att(ln1(x)));  y = h + dropout(ff2(relu(ff1(ln2(h)))))
class TransformerEncoderLayer : public Module {
 public:
  TransformerEncoderLayer(ir::Dim model_dim, ir::Dim ff_dim, int64_t num_heads,
                          double dropout = 0.1);
  Tensor forward(const Tensor& x, const ir::Dim& axis,
                 std::source_location loc = std::source_location::current()) const;
  std::shared_ptr<LayerNorm> ln1, ln2;
  std::shared_ptr<SelfAttention> self_att;
  std::shared_ptr<Linear> ff1, ff2;

 private:
  double dropout_;
};

/// `num_layers` TransformerEncoderLayers ("layers.0", ...) and a final LayerNorm.
class TransformerEncoder : public Module {
 public:
  TransformerEncoder(int64_t num_layers, ir::Dim model_dim, ir::Dim ff_dim, int64_t num_heads,
                     double dropout = 0.1);
  Tensor forward(const Tensor& x, const ir::Dim& axis,
                 std::source_location loc = std::source_location::current()) const;
  std::shared_ptr<ModuleList> layers;
  std::shared_ptr<LayerNorm> final_norm;
};

/// A lookup table: forward(ids) gathers rows of weight [vocab, dim] by the
/// sparse ids (whose sparse dim must be `vocab`). Params: weight (embedding).
class Embedding : public Module {
 public:
  Embedding(ir::Dim vocab, ir::Dim dim);
  Tensor forward(const Tensor& ids,
                 std::source_location loc = std::source_location::current()) const;
  Parameter& weight() { return weight_; }

 private:
  ir::Dim vocab_, dim_;
  Parameter weight_;
};

/// Checks that `x` has `dim`; otherwise fails with a message naming `m`,
/// e.g. `linear 'out': input dim 'feat'(512) does not match in_dim 'hidden'(256)`.
void check_input_dim(const Module& m, const Tensor& x, const ir::Dim& dim,
                     absl::string_view dim_role, const ir::SourceLoc& loc);

}  // namespace retc::nn
