// Audio front-end functions: features from raw audio inside the model (STFT,
// power spectrum, mel filterbank, log-mel as RETURNN's frontend computes them,
// returnn/frontend/signal.py and audio/mel.py), and SpecAugment (https://arxiv.org/abs/1904.08779)
// as RETURNN's own frontend has it (returnn/frontend/audio/specaugment.py) and
// the 2019 published RETURNN setups used it, composed of ordinary ops (fresh
// random numbers, comparisons against a range, where, the global train step).
//
//   nn::Tensor x = b.extern_data("data", {Dim::batch(), time, features});
//   x = nn::specaugment(x, time, features);   // masked in training only
//
// Each sequence gets a random number of time masks (blocks of frames set to
// 0) and of feature masks (blocks of feature channels set to 0). A schedule
// over the global train step makes them milder in the first steps: with
// steps {s0, s1, s2} and the flags f0 = (step >= s0), f1, f2,
//   time masks:    between min(f1 + f2, T) and
//                  min(max(T / frames_per_time_mask, 2) * (f0 + f1 + 2 f2), T)
//                  (T: the sequence's length), each 1 to max_time_mask_width frames;
//   feature masks: between f1 + f2 and 2 f0 + f1 + 2 f2,
//                  each 1 to max_feature_mask_width channels.
// Mask starts are drawn uniformly within the sequence (RETURNN draws distinct
// starts with top_k; here two masks may start at one frame, which matters
// only when a sequence has fewer frames than masks). The number of time
// masks has a static bound, max_time_masks.
//
// Log-mel features of 16 kHz waveforms [B, samples] (rf's
// log_mel_filterbank_from_raw: 25 ms Hann windows every 10 ms, a 512-point
// FFT, 80 triangular mel filters, log10 of max(energy, 1e-10)):
//
//   nn::LogMel f = nn::log_mel_filterbank_from_raw(audio, samples, Dim::feature("mel", 80));
//   // f.features: [B, f.frames, mel]; f.frames: ceil((samples - 400 + 1) / 160) per sequence
//
// The STFT is a discrete Fourier transform of each window written as two
// matmuls with cos and sin tables that the graph computes from ranges
// (angles reduced modulo the FFT size, exact in float32), so it runs, and
// differentiates, with ordinary ops on both targets; its numbers equal rf's
// FFT-based ones (torch.stft, tf.signal.stft) within float32 rounding.
#pragma once

#include <array>
#include <cstdint>
#include <source_location>

#include "compiler/nn/tensor.h"

namespace retc::nn {

struct SpecAugmentOptions {
  /// The most frames one time mask covers (RETURNN: max_consecutive_spatial_dims).
  int64_t max_time_mask_width = 20;
  /// At full strength up to max(T / this, 2) time masks (RETURNN: num_spatial_mask_factor).
  int64_t frames_per_time_mask = 100;
  /// A static bound on the time masks of one sequence.
  int64_t max_time_masks = 50;
  /// The most channels one feature mask covers; 0: a fifth of the feature
  /// dim (RETURNN's default, max_consecutive_feature_dims).
  int64_t max_feature_mask_width = 0;
  /// The schedule over the global train step (see above).
  std::array<int64_t, 3> steps = {0, 1000, 2000};
  /// false: full strength from the first step (f0 = f1 = f2 = 1).
  bool step_dependent = true;
  /// false: masks in evaluation too.
  bool only_in_training = true;
};

/// Random masks along one axis: how many per sequence, and each slot's start
/// and width (slots at and past `num` are unused).
struct RandomMasks {
  Tensor num;    ///< [B] (float32, whole numbers)
  Tensor start;  ///< [B, slots] (float32, whole numbers)
  Tensor width;  ///< [B, slots] (float32, whole numbers >= 1)
  Tensor mask;   ///< [B, axis] bool: covered by some used slot
};

struct SpecAugmentMasks {
  RandomMasks time;
  RandomMasks feature;
};

/// The masks specaugment draws for `x` [B, time, feature] (fresh at every
/// step), in training and in evaluation alike.
SpecAugmentMasks specaugment_masks(const Tensor& x, const ir::Dim& time, const ir::Dim& feature,
                                   const SpecAugmentOptions& opts = {},
                                   std::source_location loc = std::source_location::current());
/// `x` with the masked frames and channels set to 0.
Tensor apply_masks(const Tensor& x, const SpecAugmentMasks& masks,
                   std::source_location loc = std::source_location::current());
/// SpecAugment: apply_masks(x, specaugment_masks(x, ...)) in training (only
/// that branch computes them), `x` unchanged in evaluation.
Tensor specaugment(const Tensor& x, const ir::Dim& time, const ir::Dim& feature,
                   const SpecAugmentOptions& opts = {},
                   std::source_location loc = std::source_location::current());

/// The short-time Fourier transform of a real signal: X[t, k] = sum_n x[t *
/// step + n] w[n] exp(-2 pi i k n / fft_length), w the periodic Hann window
/// of frame_length (rounded down to even, as rf's window_enforce_even) padded
/// with zeros on the right to fft_length (TF's and SciPy's alignment, rf's
/// default), for k = 0 .. fft_length / 2. Complex values as their two parts.
struct Spectrum {
  Tensor real;     ///< [..., frames, freq]
  Tensor imag;     ///< [..., frames, freq]
  ir::Dim frames;  ///< ceil((T - frame_length + 1) / frame_step) per sequence ("valid" windows)
  ir::Dim freq;    ///< fft_length / 2 + 1
};
/// The STFT of `x` along its `axis` (other dims are batch dims; samples
/// past a sequence's end count as 0, as rf masks them). fft_length 0: frame_length.
Spectrum stft(const Tensor& x, const ir::Dim& axis, int64_t frame_length, int64_t frame_step,
              int64_t fft_length = 0, std::source_location loc = std::source_location::current());
/// |X|^2 = real^2 + imag^2.
Tensor power_spectrum(const Spectrum& s,
                      std::source_location loc = std::source_location::current());

/// The mel filterbank (RETURNN's: 1125 ln(1 + f / 700) mels, |out_dim|
/// triangular filters with centers equally spaced in mels between f_min and
/// f_max, Huang & Acero eq. 6.141) applied to `x`'s static `freq` dim of
/// fft_length / 2 + 1 bins: [..., freq] -> [..., out_dim]. f_max 0: half the
/// sampling rate. The filters are computed in the graph (float32).
Tensor mel_filterbank(const Tensor& x, const ir::Dim& freq, const ir::Dim& out_dim,
                      double sampling_rate, double f_min = 0.0, double f_max = 0.0,
                      std::source_location loc = std::source_location::current());

struct LogMelOptions {
  double sampling_rate = 16000;
  /// Window and step in seconds (400 and 160 samples at 16 kHz).
  double window_len = 0.025;
  double step_len = 0.010;
  /// The FFT size; 0: the next power of two of the window's samples.
  int64_t fft_length = 0;
  /// The logarithm's base (10, or e).
  double log_base = 10.0;
};
struct LogMel {
  Tensor features;  ///< [..., frames, out_dim]
  ir::Dim frames;
};
/// Log-mel features of raw audio `x` [..., axis] (a static feature dim of
/// size 1, as OggZipDataset's raw features have, is reduced away):
/// log(max(mel_filterbank(power_spectrum(stft(x))), 1e-10)) / ln(log_base), as
/// rf's log_mel_filterbank_from_raw.
LogMel log_mel_filterbank_from_raw(const Tensor& x, const ir::Dim& axis, const ir::Dim& out_dim,
                                   const LogMelOptions& opts = {},
                                   std::source_location loc = std::source_location::current());

}  // namespace retc::nn
