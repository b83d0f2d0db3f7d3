#include "compiler/nn/loop.h"

#include "absl/strings/str_cat.h"
#include "compiler/nn/error.h"

namespace retc::nn {

Loop::Loop(Builder& b, ir::Dim axis, std::source_location loc)
    : b_(b), axis_(axis), id_(b.begin_loop(axis, ir::SourceLoc::from(loc))) {}

Tensor Loop::unstack(const Tensor& x, std::source_location loc) {
  return b_.add(ir::NodeKind::kLoopUnstack, {x}, {{"loop", int64_t{id_}}, {"axis", axis_}},
                ir::SourceLoc::from(loc));
}

Tensor Loop::state(const Tensor& initial, std::vector<ir::Dim> dims, std::source_location loc) {
  ir::SourceLoc l = ir::SourceLoc::from(loc);
  if (!initial.defined()) fail(l, "loop state without an initial value: pass loop.state(initial)");
  if (dims.empty()) dims = initial.dims();
  Tensor s = b_.add(ir::NodeKind::kLoopState, {initial},
                    {{"loop", int64_t{id_}}, {"axis", axis_}, {"dims", std::move(dims)}}, l);
  b_.add_loop_state(id_, s);
  return s;
}

void Loop::next(const Tensor& state, const Tensor& value, std::source_location loc) {
  ir::SourceLoc l = ir::SourceLoc::from(loc);
  b_.set_loop_next(id_, state, l);
  b_.add(ir::NodeKind::kLoopNext, {state, value}, {{"loop", int64_t{id_}}}, l);
}

void Loop::end(std::source_location loc) { b_.end_loop(id_, ir::SourceLoc::from(loc)); }

Tensor Loop::stack(const Tensor& value, std::source_location loc) {
  ir::SourceLoc l = ir::SourceLoc::from(loc);
  if (value.defined() && b_.loop_of(value) != id_) {
    fail(l,
         "loop.stack: the value is not computed inside this loop (from an unstacked frame or "
         "a state)");
  }
  return b_.add(ir::NodeKind::kLoopStack, {value}, {{"loop", int64_t{id_}}, {"axis", axis_}}, l);
}

}  // namespace retc::nn
