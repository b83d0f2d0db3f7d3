// nn::Sequential takes every module whose forward takes the input, or the
// input and the time dim (an LSTM); one whose forward takes anything else is
// a short compile error naming Sequential::append and what its forward must
// take, not a template dump. expect_error.sh compiles this file twice: as is
// (must build) and with -DRETC_UNSUPPORTED (must fail with that message).
#include "compiler/nn/modules.h"

namespace nn = retc::nn;
using retc::ir::Dim;

// A forward over two inputs: no Sequential can feed it.
struct TwoInputs : nn::Module {
  TwoInputs() : Module("two_inputs") {}
  nn::Tensor forward(const nn::Tensor& a, const nn::Tensor& b) const { return a + b; }
};

void build(nn::Builder& b) {
  Dim time = Dim::spatial("time"), in = Dim::feature("in", 3), hidden = Dim::feature("hidden", 4);
  nn::Tensor x = b.extern_data("data", {Dim::batch(), time, in});
  auto seq = std::make_shared<nn::Sequential>();
  seq->append(std::make_shared<nn::Linear>(in, hidden));
  seq->append(std::make_shared<nn::BLstm>(hidden, hidden, hidden));
#ifdef RETC_UNSUPPORTED
  seq->append(std::make_shared<TwoInputs>());
#endif
  b.set_root(seq);
  seq->forward(x, time).mark_as_output();
}
