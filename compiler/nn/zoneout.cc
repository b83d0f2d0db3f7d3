#include "compiler/nn/zoneout.h"

#include "absl/strings/str_cat.h"
#include "compiler/nn/builder.h"

namespace retc::nn {
namespace {

// Training: each unit keeps `prev` with probability z (a fresh mask per
// frame; `frame` places the draw in the loop); evaluation: the expectation.
Tensor zoneout(const Tensor& prev, const Tensor& next, double z, const Tensor& frame,
               const ir::Dim& dim, std::source_location loc) {
  if (z == 0.0) return next;
  Builder& b = next.builder();
  Tensor keep = compare(random_uniform(b, {ir::Dim::batch(), dim}, 0.0, 1.0, {frame}, loc),
                        constant(b, z, {}, loc), "less", loc);
  Tensor trained = where(keep, prev, next, loc);
  Tensor expected = add(mul(constant(b, z, {}, loc), prev, loc),
                        mul(constant(b, 1.0 - z, {}, loc), next, loc), loc);
  return where(train_flag(b, loc), trained, expected, loc);
}

}  // namespace

ZoneoutLstm::ZoneoutLstm(ir::Dim in_dim, ir::Dim out_dim, double zoneout_cell,
                         double zoneout_output)
    : Module("zoneout_lstm"),
      out_dim_(out_dim),
      zoneout_cell_(zoneout_cell),
      zoneout_output_(zoneout_output) {
  for (double p : {zoneout_cell, zoneout_output}) {
    if (!(p >= 0 && p <= 1))
      reject(absl::StrCat(describe(), ": zoneout probabilities must be in [0, 1], got ", p));
  }
  cell = register_module("cell", std::make_shared<Lstm>(in_dim, out_dim));
}

LstmState ZoneoutLstm::step(const Tensor& input, const LstmState& state,
                            std::source_location loc) const {
  LstmState out;
  out.h = call(input, loc, [&](const Tensor& x) {
    LstmState next = cell->step(x, state, loc);
    out.c = zoneout(state.c, next.c, zoneout_cell_, x, out_dim_, loc);
    return zoneout(state.h, next.h, zoneout_output_, x, out_dim_, loc);
  });
  return out;
}

Tensor ZoneoutLstm::forward(const Tensor& input, const ir::Dim& axis,
                            std::source_location loc) const {
  return call(input, loc, [&](const Tensor& x) { return run(x, axis, {}, nullptr, loc); });
}

std::pair<Tensor, LstmState> ZoneoutLstm::forward_with_state(const Tensor& input,
                                                             const ir::Dim& axis,
                                                             const LstmState& initial,
                                                             std::source_location loc) const {
  if (initial.h.defined() != initial.c.defined())
    fail(ir::SourceLoc::from(loc),
         absl::StrCat(describe(), ": the initial state needs both h and c"));
  LstmState final;
  Tensor y = call(input, loc, [&](const Tensor& x) { return run(x, axis, initial, &final, loc); });
  return {y, final};
}

Tensor ZoneoutLstm::run(const Tensor& x, const ir::Dim& axis, const LstmState& initial,
                        LstmState* final, std::source_location loc) const {
  Builder& b = x.builder();
  Loop loop(b, axis, loc);
  auto init = [&](const Tensor& t) { return t.defined() ? t : constant(b, 0.0, {}, loc); };
  LstmState state{loop.state(init(initial.h), {ir::Dim::batch(), out_dim_}, loc),
                  loop.state(init(initial.c), {ir::Dim::batch(), out_dim_}, loc)};
  LstmState next = step(loop.unstack(x, loc), state, loc);
  loop.next(state.h, next.h, loc);
  loop.next(state.c, next.c, loc);
  loop.end(loc);
  if (final) *final = {loop.last(next.h, loc), loop.last(next.c, loc)};
  return loop.stack(next.h, loc);
}

}  // namespace retc::nn
