// Transducers (Graves 2012, https://arxiv.org/abs/1211.3711): the full-sum
// loss over all alignments of a label sequence with the encoder's frames,
// from the joint network's logits at every (frame, prediction position).
//
//   // targets [B, label_time] over `labels`; enc [B, time, E]
//   nn::Tensor pred_in = nn::pad(targets, label_time, 1, 0, bos);  // BOS + labels
//   const Dim pred_time = pred_in.dims()[1];                         // U + 1 positions
//   nn::Tensor logits = joint(enc, prediction(pred_in));    // [B, time, pred_time, labels + blank]
//   nn::Tensor nll = nn::transducer_loss(logits, targets, time, label_time, pred_time);
//   nn::custom_loss(nll).mark_as_loss("rnnt");
//
// Prediction position u has seen the first u labels (u = 0: BOS only). The
// class dim of the logits is `labels + blank` (blank last, a dim of size 1,
// as for nn::ctc_loss). The forward algorithm runs as an nn::Loop over the
// frames with a state over the prediction positions, from ordinary ops, so
// both targets compute it and its gradient the same way.
#pragma once

#include <source_location>

#include "compiler/nn/tensor.h"

namespace retc::nn {

struct TransducerLossOptions {
  /// false: RNN-T (Graves): a label does not advance time, any number of
  /// labels per frame, a blank ends the frame; true: one symbol per frame, a
  /// blank or a label (RNA, "monotonic RNN-T"; RETURNN setups' default
  /// topology for time-synchronous decoding with one label per frame).
  bool monotonic = false;
};

/// The negative log-probability of `targets` (per sequence, [B] float32)
/// under the transducer whose joint network gave `logits` [B, time,
/// pred_time, labels + blank] (any order; log-softmax taken here). `targets`
/// [B, label_time] are sparse over `labels`; `pred_time` has each sequence's
/// number of labels + 1 positions (nn::pad of the targets by one BOS).
/// A sequence whose labels cannot align (monotonic, more labels than frames)
/// gets a loss near 1e30: keep its frames at least its labels.
Tensor transducer_loss(const Tensor& logits, const Tensor& targets, const ir::Dim& time,
                       const ir::Dim& label_time, const ir::Dim& pred_time,
                       const TransducerLossOptions& opts = {},
                       std::source_location loc = std::source_location::current());

}  // namespace retc::nn
