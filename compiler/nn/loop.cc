#include "compiler/nn/loop.h"

#include "absl/strings/str_cat.h"
#include "compiler/nn/builder.h"
#include "compiler/nn/error.h"
#include "compiler/nn/tensor.h"

namespace retc::nn {

Loop::Loop(Builder& b, ir::Dim axis, std::source_location loc)
    : b_(b), axis_(axis), id_(b.begin_loop(axis, ir::SourceLoc::from(loc))) {}

Tensor Loop::unstack(const Tensor& x, std::source_location loc) {
  return b_.add(ir::NodeKind::kLoopUnstack, {x},
                {ir::attr::Loop{int64_t{id_}}, ir::attr::Axis{axis_}}, ir::SourceLoc::from(loc));
}

Tensor Loop::state(const Tensor& initial, std::vector<ir::Dim> dims, std::source_location loc) {
  ir::SourceLoc l = ir::SourceLoc::from(loc);
  if (!initial.defined()) fail(l, "loop state without an initial value: pass loop.state(initial)");
  if (dims.empty()) dims = initial.dims();
  // The initial value broadcast to the state's dims, explicitly (by a
  // constant 1 over the dims it lacks): every target sees a state's full
  // dims from its first frame on.
  std::vector<ir::Dim> missing;
  for (const ir::Dim& d : dims) {
    if (ir::index_of(initial.dims(), d) < 0 && d != axis_) missing.push_back(d);
  }
  Tensor init = initial;
  if (!missing.empty() && ir::index_of(initial.dims(), axis_) < 0) {
    if (initial.type().dtype != ir::DType::kFloat32 || initial.type().sparse_dim) {
      fail(l, absl::StrCat("loop.state: the initial value ", initial.type().describe(),
                           " must have the state's dims ", ir::describe(dims),
                           " (only float32 initial values broadcast)"));
    }
    std::vector<Tensor> sizes;
    for (const ir::Dim& d : missing) {
      if (!d.is_dynamic() || d.is_batch()) continue;
      Tensor src = b_.size_source(d);
      if (!src.defined()) {
        fail(l, absl::StrCat("loop.state: no value outside the loop has the state's dim ",
                             d.describe(), ", which would give its sizes"));
      }
      sizes.push_back(src);
    }
    init = mul(initial, constant(b_, 1.0, missing, sizes, loc), loc);
  }
  Tensor s = b_.add(
      ir::NodeKind::kLoopState, {init},
      {ir::attr::Loop{int64_t{id_}}, ir::attr::Axis{axis_}, ir::attr::DimsAttr{std::move(dims)}},
      l);
  b_.add_loop_state(id_, s);
  return s;
}

void Loop::next(const Tensor& state, const Tensor& value, std::source_location loc) {
  ir::SourceLoc l = ir::SourceLoc::from(loc);
  b_.set_loop_next(id_, state, l);
  b_.add(ir::NodeKind::kLoopNext, {state, value}, {ir::attr::Loop{int64_t{id_}}}, l);
}

void Loop::end(std::source_location loc) {
  ir::SourceLoc l = ir::SourceLoc::from(loc);
  if (!b_.size_source(axis_).defined()) {
    fail(l, absl::StrCat("loop.end: the loop over ", axis_.describe(),
                         " runs over a new axis (no value outside the loop has it), so it needs "
                         "an end condition and a maximal length: loop.end(done, max_len)"));
  }
  b_.end_loop(id_, l);
}

void Loop::end(const Tensor& done, const Tensor& max_len, std::source_location loc) {
  ir::SourceLoc l = ir::SourceLoc::from(loc);
  if (b_.size_source(axis_).defined()) {
    fail(l, absl::StrCat("loop.end(done, max_len): the loop runs over ", axis_.describe(),
                         ", which values outside the loop have: its frames are theirs; end it "
                         "with loop.end()"));
  }
  if (!done.defined() || !max_len.defined())
    fail(l, "loop.end(done, max_len): the end condition and the maximal length must be defined");
  if (b_.loop_of(done) != id_) {
    fail(l,
         "loop.end: the end condition is not computed in this loop (from an unstacked frame "
         "or a state)");
  }
  for (const ir::Dim& d : done.dims()) {
    if (!d.is_batch()) {
      fail(l, absl::StrCat("loop.end: the end condition must be one flag per sequence ([B]), got ",
                           ir::describe(done.dims()), "; reduce it over ", d.describe(), " first"));
    }
  }
  if (b_.loop_of(max_len) >= 0)
    fail(l, "loop.end: the maximal length must be computed outside the loop");
  b_.add(ir::NodeKind::kLoopEnd, {done, max_len},
         {ir::attr::Loop{int64_t{id_}}, ir::attr::Axis{axis_}}, l);
  b_.end_loop(id_, l);
}

void Loop::end(const Tensor& done, int64_t max_len, std::source_location loc) {
  if (max_len < 1) {
    fail(ir::SourceLoc::from(loc),
         absl::StrCat("loop.end: the maximal length must be positive, got ", max_len));
  }
  end(done, cast(constant(b_, static_cast<double>(max_len), {}, loc), ir::DType::kInt32, loc), loc);
}

Tensor Loop::choice(const Tensor& log_probs, const ir::Dim& labels, std::source_location loc) {
  return b_.add(ir::NodeKind::kChoice, {log_probs},
                {ir::attr::Loop{int64_t{id_}}, ir::attr::DimAttr{labels}},
                ir::SourceLoc::from(loc));
}

Tensor Loop::cum_concat(const Tensor& x, const ir::Dim& out_dim, std::source_location loc) {
  return b_.add(ir::NodeKind::kCumConcat, {x},
                {ir::attr::Loop{int64_t{id_}}, ir::attr::Axis{axis_}, ir::attr::OutDim{out_dim}},
                ir::SourceLoc::from(loc));
}

Tensor Loop::add_positional_encoding(const Tensor& x, std::source_location loc) {
  return b_.add(ir::NodeKind::kPosEncoding, {x},
                {ir::attr::Loop{int64_t{id_}}, ir::attr::Axis{axis_}}, ir::SourceLoc::from(loc));
}

Tensor Loop::stack(const Tensor& value, std::source_location loc) {
  ir::SourceLoc l = ir::SourceLoc::from(loc);
  if (value.defined() && b_.loop_of(value) != id_) {
    fail(l,
         "loop.stack: the value is not computed inside this loop (from an unstacked frame or "
         "a state)");
  }
  return b_.add(ir::NodeKind::kLoopStack, {value},
                {ir::attr::Loop{int64_t{id_}}, ir::attr::Axis{axis_}}, l);
}

Tensor Loop::last(const Tensor& value, std::source_location loc) {
  const Tensor all = stack(value, loc);
  auto int32 = [&](double v) { return cast(constant(b_, v, {}, loc), ir::DType::kInt32, loc); };
  const Tensor end = axis_.is_dynamic() ? length(all, axis_, loc) : int32(*axis_.size());
  const Tensor pos = maximum(sub(end, int32(1.0), loc), int32(0.0), loc);
  return gather(all, as_indices(pos, axis_, loc), axis_, loc);
}

}  // namespace retc::nn
