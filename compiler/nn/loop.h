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
  /// Ends the loop body; every state must have its next value.
  void end(std::source_location loc = std::source_location::current());
  /// The values of an inner `value` over all frames, with the loop axis
  /// (after the batch dim), for use outside the loop.
  Tensor stack(const Tensor& value, std::source_location loc = std::source_location::current());

  const ir::Dim& axis() const { return axis_; }

 private:
  Builder& b_;
  ir::Dim axis_;
  int32_t id_;
};

}  // namespace retc::nn
