// The zoneout LSTM (Krueger et al. 2016, "Zoneout: Regularizing RNNs by
// Randomly Preserving Hidden Activations"; RETURNN's ZoneoutLSTMCell),
// composed of an nn::Lstm step, fresh random masks and the train flag.
#pragma once

#include <memory>
#include <source_location>

#include "compiler/nn/layers.h"
#include "compiler/nn/loop.h"

namespace retc::nn {

/// An LSTM whose state units keep their previous value at random: in
/// training each unit of the cell state keeps it with probability
/// `zoneout_cell`, each unit of the output with `zoneout_output` (a fresh
/// mask per frame); in evaluation each becomes the expectation,
/// z * previous + (1 - z) * new. Params: those of `cell` (an nn::Lstm:
/// cell.ff_weight, cell.rec_weight, cell.bias; NativeLstm2's gates).
class ZoneoutLstm : public Module {
 public:
  ZoneoutLstm(ir::Dim in_dim, ir::Dim out_dim, double zoneout_cell = 0.15,
              double zoneout_output = 0.05);
  /// Over the frames of `axis` from a zero state: the outputs [..., axis, out].
  Tensor forward(const Tensor& x, const ir::Dim& axis,
                 std::source_location loc = std::source_location::current()) const;
  /// Over the frames of `axis` from the state `initial` (undefined h and c:
  /// zeros): the outputs, and each sequence's state after its last frame, to
  /// hand to the next call (a stream in chunks: the second chunk's call from
  /// the first's state continues it as one call over both would).
  std::pair<Tensor, LstmState> forward_with_state(
      const Tensor& x, const ir::Dim& axis, const LstmState& initial = {},
      std::source_location loc = std::source_location::current()) const;
  /// One frame `x` of a loop and the state before it; the state after.
  LstmState step(const Tensor& x, const LstmState& state,
                 std::source_location loc = std::source_location::current()) const;
  std::shared_ptr<Lstm> cell;

 private:
  Tensor run(const Tensor& x, const ir::Dim& axis, const LstmState& initial, LstmState* final,
             std::source_location loc) const;
  ir::Dim out_dim_;
  double zoneout_cell_, zoneout_output_;
};

}  // namespace retc::nn
