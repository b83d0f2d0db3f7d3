// A module's param is not assignable from another's: `b->weight() =
// a->weight()` compiled and silently gave a model in which b computes with a's
// param while b's own stays registered and trained for nothing. Tying is
// computing with the other's param. expect_error.sh compiles this file twice:
// as is (ties by computing with a's weight: must build) and with
// -DRETC_ASSIGN (must fail at the assignment).
#include "compiler/nn/modules.h"

namespace nn = retc::nn;
using retc::ir::Dim;

struct Pair : nn::Module {
  Pair(Dim in, Dim out) : Module("pair") {
    a = register_module("a", std::make_shared<nn::Linear>(in, out));
    b = register_module("b", std::make_shared<nn::Linear>(in, out));
  }
  std::shared_ptr<nn::Linear> a, b;
};

void build(nn::Builder& b) {
  Dim time = Dim::spatial("time"), in = Dim::feature("in", 3), out = Dim::feature("out", 3);
  nn::Tensor x = b.extern_data("data", {Dim::batch(), time, in});
  auto m = b.set_root(std::make_shared<Pair>(in, out));
#ifdef RETC_ASSIGN
  m->b->weight() = m->a->weight();
#endif
  (m->a->forward(x) + nn::dot(x, b.param(m->a->weight()), {in})).mark_as_output();
}
