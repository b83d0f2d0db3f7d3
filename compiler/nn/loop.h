// Loops over a dim with state (RETURNN's rec layer with a subnetwork unit).
//
//   nn::Loop loop(b, time);                         // over the frames of `time`
//   nn::Tensor h = loop.state(nn::constant(b, 0.0, {Dim::batch(), hidden}));
//   nn::Tensor x_t = loop.unstack(x);               // x's current frame
//   nn::Tensor h_new = nn::tanh(in->forward(x_t) + rec->forward(h));
//   loop.next(h, h_new);                            // h in the next frame
//   loop.end();
//   nn::Tensor ys = loop.stack(h_new);              // [B, time, hidden]
//
// A loop over a new axis (a decoder: no value outside has the axis) ends
// per sequence: after the frame where `done` holds, at most `max_len`
// frames; loop.stack() gives the axis those lengths. With a choice, `retc
// search` keeps the best hypotheses (beam search) and the states follow them:
//
//   nn::Loop loop(b, out_time);
//   nn::Tensor prev = loop.state(bos, {Dim::batch()});   // sparse labels
//   nn::Tensor h = ...decoder step from embed(prev)...;
//   nn::Tensor y = loop.choice(nn::log_softmax(logits, vocab), vocab);
//   loop.next(prev, y);
//   loop.end(nn::compare(y, eos, "equal"), max_len);
//   nn::Tensor hyps = loop.stack(y);                   // [B, out_time]
//
// Values computed from unstacked frames or states are inside the loop (one
// value per frame); outside, only loop.stack() reads them. Mistakes (a state
// without an initial or a next value, an inner value used outside, nested
// loops) fail at build time at the user's line.
#pragma once

#include <source_location>

#include "compiler/nn/builder.h"

namespace retc::nn {

class Loop {
 public:
  /// Starts a loop over the frames of the spatial dim `axis`.
  Loop(Builder& b, ir::Dim axis, std::source_location loc = std::source_location::current());
  Loop(const Loop&) = delete;
  Loop& operator=(const Loop&) = delete;

  /// The current frame of `x` (which has the loop axis), without that axis.
  Tensor unstack(const Tensor& x, std::source_location loc = std::source_location::current());
  /// A state: its value in the previous frame, `initial` before the first
  /// one. The state has `dims` (default: initial's), to which `initial`
  /// (without the loop axis) broadcasts: `loop.state(zeros, {Dim::batch(), hidden})`.
  Tensor state(const Tensor& initial, std::vector<ir::Dim> dims = {},
               std::source_location loc = std::source_location::current());
  /// Sets the state's value for the next frame (once per state).
  void next(const Tensor& state, const Tensor& value,
            std::source_location loc = std::source_location::current());
  /// Ends the loop body; every state must have its next value. A loop over a
  /// new axis needs the overloads with an end condition.
  void end(std::source_location loc = std::source_location::current());
  /// Ends a loop over a new axis: a sequence ends after the frame where the
  /// bool `done` (a frame, e.g. [B]) holds, that frame included, and after
  /// at most `max_len` (a scalar int32, e.g. from nn::length) frames.
  void end(const Tensor& done, const Tensor& max_len,
           std::source_location loc = std::source_location::current());
  void end(const Tensor& done, int64_t max_len,
           std::source_location loc = std::source_location::current());
  /// The labels over `labels` chosen from `log_probs` (a frame with the
  /// static dim `labels`): in `retc search`, beam search keeps the `--beam`
  /// best hypotheses by their summed log-probs, and the states and the
  /// frames computed before the choice follow their hypotheses. Search only:
  /// training reads its targets instead (teacher forcing). One per loop.
  Tensor choice(const Tensor& log_probs, const ir::Dim& labels,
                std::source_location loc = std::source_location::current());
  /// The frames of `x` so far (this one included) along the new dynamic
  /// `out_dim` (of size frame + 1): self-attention's cached keys and values.
  Tensor cum_concat(const Tensor& x, const ir::Dim& out_dim,
                    std::source_location loc = std::source_location::current());
  /// x (a frame) plus the sinusoidal position signal of the current frame,
  /// as nn::add_positional_encoding gives frame t of a whole sequence.
  Tensor add_positional_encoding(const Tensor& x,
                                 std::source_location loc = std::source_location::current());
  /// The values of an inner `value` over all frames, with the loop axis
  /// (after the batch dim), for use outside the loop.
  Tensor stack(const Tensor& value, std::source_location loc = std::source_location::current());
  /// The value of an inner `value` in each sequence's last frame (its final
  /// state, e.g. an encoder's summary or a decoder's state to hand on), for
  /// use outside the loop; a sequence of no frames gives its first frame's
  /// place. Example: `Tensor summary = loop.last(h_new);  // [B, hidden]`
  Tensor last(const Tensor& value, std::source_location loc = std::source_location::current());

  const ir::Dim& axis() const { return axis_; }

 private:
  Builder& b_;
  ir::Dim axis_;
  int32_t id_;
};

}  // namespace retc::nn
