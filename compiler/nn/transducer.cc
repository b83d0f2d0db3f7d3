#include "compiler/nn/transducer.h"

#include <optional>

#include "absl/strings/str_cat.h"
#include "compiler/nn/builder.h"
#include "compiler/nn/error.h"
#include "compiler/nn/loop.h"

namespace retc::nn {
namespace {

using ir::Dim;

// "Minus infinity" that stays finite: exp() of it is 0, its gradients are 0,
// and sums with it cannot meet inf - inf.
constexpr double kNegInf = -1e30;

Tensor scalar(Builder& b, double v, std::source_location loc) { return constant(b, v, {}, loc); }

// log(exp(a) + exp(b)), stable.
Tensor log_add_exp(const Tensor& a, const Tensor& b, std::source_location loc) {
  Tensor m = maximum(a, b, loc);
  return m + activation(activation(a - m, "exp", loc) + activation(b - m, "exp", loc), "log", loc);
}

}  // namespace

Tensor transducer_loss(const Tensor& logits, const Tensor& targets, const Dim& time,
                       const Dim& label_time, const Dim& pred_time,
                       const TransducerLossOptions& opts, std::source_location loc) {
  Builder& b = logits.builder();
  const ir::SourceLoc where_ = ir::SourceLoc::from(loc);
  const std::optional<Dim>& labels = targets.type().sparse_dim;
  if (!labels || !labels->size() || ir::index_of(targets.dims(), label_time) < 0 ||
      targets.dims().size() != 2)
    fail(where_,
         absl::StrCat("transducer_loss: the targets must be [batch, ", label_time.describe(),
                      "], sparse over a static label dim; got ", targets.type().describe()));
  // The class dim: the one that is not batch, time or pred_time.
  std::optional<Dim> classes;
  int64_t others = 0;
  for (const Dim& d : logits.dims()) {
    if (d.is_batch() || d == time || d == pred_time) continue;
    classes = d;
    ++others;
  }
  if (ir::index_of(logits.dims(), time) < 0 || ir::index_of(logits.dims(), pred_time) < 0 ||
      logits.dims().size() != 4 || others != 1 || !classes || !classes->size() ||
      *classes->size() != *labels->size() + 1 || !ir::is_floating(logits.type().dtype))
    fail(where_,
         absl::StrCat("transducer_loss: the logits must be float [batch, ", time.describe(), ", ",
                      pred_time.describe(), ", labels + blank] with ", *labels->size() + 1,
                      " classes (blank last); got ", logits.type().describe()));
  const int64_t blank = *labels->size();

  Tensor log_probs = log_softmax(logits, *classes, loc);
  Tensor blank_lp =
      gather(log_probs, sparse_constant(b, blank, *classes, {}, {}, loc), *classes, loc);
  // The next label at each prediction position u (its first u labels seen):
  // the targets padded by one at the end, on pred_time's positions.
  Tensor padded = pad(targets, label_time, 0, 1, 0.0, std::nullopt, loc);
  const Dim padded_time =
      padded.dims()[static_cast<size_t>(ir::index_of(targets.dims(), label_time))];
  Tensor next_label =
      as_indices(replace_dim(padded, padded_time, logits, pred_time, loc), *classes, loc);
  Tensor label_lp = gather(log_probs, next_label, *classes, loc);

  // The forward variables: s_t[u], the log-probability of having consumed
  // frames < t and output the first u labels; s_0 = [0, -inf, ...].
  Tensor pos = range_in_axis(label_lp, pred_time, loc);
  Tensor first = compare(pos, cast(scalar(b, 0.0, loc), ir::DType::kInt32, loc), "equal", loc);
  Tensor init = where(first, scalar(b, 0.0, loc), scalar(b, kNegInf, loc), loc);
  Loop loop(b, time, loc);
  Tensor s = loop.state(init, {Dim::batch(), pred_time}, loc);
  Tensor emit = loop.unstack(label_lp, loc), end = loop.unstack(blank_lp, loc);
  Tensor next;
  if (opts.monotonic) {
    // One symbol per frame: stay at u with a blank or move from u - 1 with label u.
    Tensor moved =
        where(first, scalar(b, kNegInf, loc), shift_right(s + emit, pred_time, 1, 0.0, loc), loc);
    next = log_add_exp(s + end, moved, loc);
  } else {
    // Within frame t, labels k..u-1 after position k: alpha[u] =
    // logsumexp_{k <= u} (s[k] + emit[k] + ... + emit[u - 1]) = e[u] +
    // log_cumsum_exp(s - e)[u], e the exclusive running sum of emit; then a
    // blank ends the frame.
    Tensor e = cumsum(emit, pred_time, loc) - emit;
    next = e + log_cumsum_exp(s - e, pred_time, loc) + end;
  }
  loop.next(s, next, loc);
  loop.end(loc);
  Tensor all = loop.stack(next, loc);  // s_{t+1} for each frame t
  Tensor one = cast(scalar(b, 1.0, loc), ir::DType::kInt32, loc);
  Tensor last = gather(all, as_indices(length(logits, time, loc) - one, time, loc), time, loc);
  Tensor ll =
      gather(last, as_indices(length(targets, label_time, loc), pred_time, loc), pred_time, loc);
  return activation(ll, "negative", loc);
}

}  // namespace retc::nn
