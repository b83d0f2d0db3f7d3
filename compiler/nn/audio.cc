#include "compiler/nn/audio.h"

#include <cmath>
#include <numbers>

#include "absl/strings/str_cat.h"
#include "compiler/nn/builder.h"
#include "compiler/nn/error.h"

namespace retc::nn {
namespace {

using ir::Dim;

// Whole numbers: floor of a non-negative float (a cast truncates).
Tensor floor_nonneg(const Tensor& x, std::source_location loc) {
  return cast(cast(x, ir::DType::kInt32, loc), ir::DType::kFloat32, loc);
}

Tensor c(Builder& b, double v, std::source_location loc) { return constant(b, v, {}, loc); }

// Masks along `axis` of size `len` ([B] float, or a scalar): per sequence
// between min_num and max_num ([B] or scalars, whole numbers; max_num at
// most |slots|) of them, each 1 to max_width wide, starting uniformly within
// the length. `positions`: 0, 1, ... along the axis (float32).
RandomMasks random_masks(Builder& b, const Tensor& like, const Tensor& len, const Tensor& positions,
                         const Dim& slots, const Tensor& min_num, const Tensor& max_num,
                         int64_t max_width, std::source_location loc) {
  RandomMasks m;
  const Dim batch = Dim::batch();
  Tensor u = random_uniform(b, {batch}, 0.0, 1.0, {like}, loc);
  m.num = floor_nonneg(min_num + u * (max_num - min_num + c(b, 1.0, loc)), loc);
  m.start = floor_nonneg(random_uniform(b, {batch, slots}, 0.0, 1.0, {like}, loc) * len, loc);
  m.width = floor_nonneg(random_uniform(b, {batch, slots}, 0.0, 1.0, {like}, loc) *
                             c(b, static_cast<double>(max_width), loc),
                         loc) +
            c(b, 1.0, loc);
  Tensor slot = cast(range(b, slots, loc), ir::DType::kFloat32, loc);
  Tensor in_slot = logical_and(logical_and(compare(positions, m.start, "greater_equal", loc),
                                           compare(positions, m.start + m.width, "less", loc), loc),
                               compare(slot, m.num, "less", loc), loc);
  Tensor covered = reduce(cast(in_slot, ir::DType::kFloat32, loc), "max", {slots}, loc);
  m.mask = compare(covered, c(b, 0.5, loc), "greater", loc);
  return m;
}

}  // namespace

SpecAugmentMasks specaugment_masks(const Tensor& x, const Dim& time, const Dim& feature,
                                   const SpecAugmentOptions& opts, std::source_location loc) {
  Builder& b = x.builder();
  const std::optional<int64_t> n_features = feature.size();
  if (!n_features)
    fail(ir::SourceLoc::from(loc),
         absl::StrCat("specaugment: the feature dim ", feature.describe(), " must be static"));
  const int64_t feature_width =
      opts.max_feature_mask_width > 0 ? opts.max_feature_mask_width : *n_features / 5;
  if (opts.max_time_mask_width < 1 || opts.frames_per_time_mask < 1 || opts.max_time_masks < 1 ||
      feature_width < 1) {
    fail(ir::SourceLoc::from(loc),
         absl::StrCat("specaugment: mask widths, frames_per_time_mask and max_time_masks "
                      "must be at least 1 (feature mask width ",
                      feature_width, " for ", feature.describe(), ")"));
  }
  // The schedule's flags f0, f1, f2 (float32 scalars 0 or 1).
  Tensor f[3];
  Tensor step = cast(global_train_step(b, loc), ir::DType::kFloat32, loc);
  for (int i = 0; i < 3; ++i) {
    f[i] = opts.step_dependent ? cast(compare(step, c(b, static_cast<double>(opts.steps[i]), loc),
                                              "greater_equal", loc),
                                      ir::DType::kFloat32, loc)
                               : c(b, 1.0, loc);
  }
  SpecAugmentMasks out;
  {
    Tensor len = cast(length(x, time, loc), ir::DType::kFloat32, loc);
    const Dim slots = Dim::spatial("specaug_time_slots", opts.max_time_masks);
    Tensor bound = c(b, static_cast<double>(opts.max_time_masks), loc);
    Tensor per_len =
        maximum(floor_nonneg(len / c(b, static_cast<double>(opts.frames_per_time_mask), loc), loc),
                c(b, 2.0, loc), loc);
    Tensor min_num = minimum(minimum(f[1] + f[2], len, loc), bound, loc);
    Tensor max_num =
        minimum(minimum(per_len * (f[0] + f[1] + f[2] * c(b, 2.0, loc)), len, loc), bound, loc);
    Tensor positions = cast(range_in_axis(x, time, loc), ir::DType::kFloat32, loc);
    out.time =
        random_masks(b, x, len, positions, slots, min_num, max_num, opts.max_time_mask_width, loc);
  }
  {
    const Dim slots = Dim::spatial("specaug_feature_slots", 5);
    Tensor len = c(b, static_cast<double>(*n_features), loc);
    Tensor positions = cast(range(b, feature, loc), ir::DType::kFloat32, loc);
    Tensor min_num = f[1] + f[2];
    Tensor max_num = f[0] * c(b, 2.0, loc) + f[1] + f[2] * c(b, 2.0, loc);
    out.feature = random_masks(b, x, len, positions, slots, min_num, max_num, feature_width, loc);
  }
  return out;
}

Tensor apply_masks(const Tensor& x, const SpecAugmentMasks& masks, std::source_location loc) {
  Tensor zero = constant(x.builder(), 0.0, {}, loc);
  return where(logical_or(masks.time.mask, masks.feature.mask, loc), zero, x, loc);
}

Tensor specaugment(const Tensor& x, const Dim& time, const Dim& feature,
                   const SpecAugmentOptions& opts, std::source_location loc) {
  auto masked = [&] { return apply_masks(x, specaugment_masks(x, time, feature, opts, loc), loc); };
  if (!opts.only_in_training) return masked();
  return cond(
      train_flag(x.builder(), loc), masked, [&] { return x; }, loc);
}

namespace {

// 0, 1, ..., |dim| - 1 as float32 (dense).
Tensor positions(Builder& b, const Dim& dim, std::source_location loc) {
  return cast(range(b, dim, loc), ir::DType::kFloat32, loc);
}

int64_t next_power_of_two(int64_t n) {
  int64_t p = 1;
  while (p < n) p *= 2;
  return p;
}

}  // namespace

Spectrum stft(const Tensor& x, const Dim& axis, int64_t frame_length, int64_t frame_step,
              int64_t fft_length, std::source_location loc) {
  Builder& b = x.builder();
  const ir::SourceLoc where = ir::SourceLoc::from(loc);
  if (fft_length == 0) fft_length = frame_length;
  if (frame_length < 2 || frame_step < 1 || fft_length < frame_length)
    fail(where, absl::StrCat("stft: frame_length (", frame_length, ") must be at least 2, ",
                             "frame_step (", frame_step, ") at least 1, and fft_length (",
                             fft_length, ") at least frame_length"));
  if (ir::index_of(x.dims(), axis) < 0 || axis.is_batch() || !ir::is_floating(x.type().dtype) ||
      x.type().sparse_dim)
    fail(where, absl::StrCat("stft: the signal must be float with the axis ", axis.describe(),
                             ", got ", x.type().describe()));
  const Dim win = Dim::feature("stft_window", frame_length);
  const Dim freq = Dim::feature("stft_freq", fft_length / 2 + 1);
  Tensor frames = window(x, axis, win, frame_step, "valid", loc);
  // The periodic Hann window of the even length L: 0.5 - 0.5 cos(2 pi n / L)
  // (0 at n = L, the odd frame_length's last sample).
  const double two_pi = 2.0 * std::numbers::pi;
  const int64_t even = frame_length - frame_length % 2;
  Tensor n = positions(b, win, loc);
  Tensor hann =
      c(b, 0.5, loc) - c(b, 0.5, loc) * activation(n * c(b, two_pi / even, loc), "cos", loc);
  // The angle 2 pi k n / N with k n reduced modulo N first: k n < 2^24 is exact
  // in float32, and so the table's error stays at float32 rounding of angles
  // below 2 pi.
  Tensor k = positions(b, freq, loc);
  Tensor angle =
      mod(n * k, c(b, static_cast<double>(fft_length), loc), loc) * c(b, two_pi / fft_length, loc);
  Tensor real = dot(frames, hann * activation(angle, "cos", loc), {win}, loc);
  Tensor imag =
      dot(frames, activation(hann * activation(angle, "sin", loc), "negative", loc), {win}, loc);
  // window() puts its new frame axis where `axis` was.
  const Dim out_frames = frames.dims()[static_cast<size_t>(ir::index_of(x.dims(), axis))];
  return Spectrum{real, imag, out_frames, freq};
}

Tensor power_spectrum(const Spectrum& s, std::source_location loc) {
  return add(mul(s.real, s.real, loc), mul(s.imag, s.imag, loc), loc);
}

Tensor mel_filterbank(const Tensor& x, const Dim& freq, const Dim& out_dim, double sampling_rate,
                      double f_min, double f_max, std::source_location loc) {
  Builder& b = x.builder();
  const ir::SourceLoc where = ir::SourceLoc::from(loc);
  if (ir::index_of(x.dims(), freq) < 0 || !freq.size() || *freq.size() < 2 || !out_dim.size() ||
      *out_dim.size() < 1)
    fail(where, absl::StrCat("mel_filterbank: ", x.type().describe(), " needs the static dim ",
                             freq.describe(), " (fft_length / 2 + 1 bins), and ",
                             out_dim.describe(), " a static size"));
  if (f_max == 0.0) f_max = sampling_rate / 2.0;
  if (sampling_rate <= 0.0 || f_min < 0.0 || f_max <= f_min)
    fail(where, absl::StrCat("mel_filterbank: needs 0 <= f_min < f_max and a positive "
                             "sampling rate, got f_min ",
                             f_min, ", f_max ", f_max, ", sampling rate ", sampling_rate));
  const double fft_length = static_cast<double>((*freq.size() - 1) * 2);
  auto mel = [](double f) { return 1125.0 * std::log(1.0 + f / 700.0); };
  const double mel_min = mel(f_min);
  const double mel_step = (mel(f_max) - mel_min) / static_cast<double>(*out_dim.size() + 1);
  // The filters' edges and centers in FFT bins: |out_dim| + 2 points equally
  // spaced in mels; filter i rises from point i to i + 1 and falls to i + 2.
  const Dim points = Dim::feature("mel_points", *out_dim.size() + 2);
  Tensor m = positions(b, points, loc) * c(b, mel_step / 1125.0, loc);
  if (mel_min != 0.0) m = m + c(b, mel_min / 1125.0, loc);
  Tensor center =
      c(b, fft_length / sampling_rate * 700.0, loc) * (activation(m, "exp", loc) - c(b, 1.0, loc));
  Tensor lower = slice(center, points, 0, out_dim, loc),
         mid = slice(center, points, 1, out_dim, loc),
         upper = slice(center, points, 2, out_dim, loc);
  Tensor bin = positions(b, freq, loc);
  // The triangle: rising from lower to mid, falling to upper, 0 outside.
  Tensor filters =
      relu(minimum((bin - lower) / (mid - lower), (upper - bin) / (upper - mid), loc), loc);
  return dot(x, filters, {freq}, loc);
}

LogMel log_mel_filterbank_from_raw(const Tensor& x, const Dim& axis, const Dim& out_dim,
                                   const LogMelOptions& opts, std::source_location loc) {
  Builder& b = x.builder();
  Tensor audio = x;
  for (const Dim& d : x.dims()) {
    if (d.is_feature_like() && !d.is_dynamic() && d.size() == 1)
      audio = reduce(audio, "sum", {d}, loc);  // the dataset's feature dim of 1
  }
  const int64_t window = static_cast<int64_t>(opts.window_len * opts.sampling_rate);
  const int64_t step = static_cast<int64_t>(opts.step_len * opts.sampling_rate);
  if (opts.log_base <= 0.0 || opts.log_base == 1.0)
    fail(ir::SourceLoc::from(loc),
         absl::StrCat("log_mel_filterbank_from_raw: log_base must be positive and not 1, got ",
                      opts.log_base));
  Spectrum s = stft(audio, axis, window, step,
                    opts.fft_length ? opts.fft_length : next_power_of_two(window), loc);
  Tensor energy =
      mel_filterbank(power_spectrum(s, loc), s.freq, out_dim, opts.sampling_rate, 0.0, 0.0, loc);
  Tensor log_mel = activation(maximum(energy, c(b, 1e-10, loc), loc), "log", loc);
  if (opts.log_base != std::numbers::e)
    log_mel = log_mel * c(b, 1.0 / std::log(opts.log_base), loc);
  return {log_mel, s.frames};
}

}  // namespace retc::nn
