// returnn_common's test_linear_wrong_type (a Linear called on a dict raises
// TypeError) in C++: the type system rejects it before the model runs.
// tests/returnn_common/test_nn_base.py compiles this file twice: as is (must
// build) and with -DRETC_WRONG_TYPE (must fail, naming Linear::forward).
#include <map>
#include <string>

#include "compiler/nn/modules.h"

void build(retc::nn::Builder& b) {
  using retc::ir::Dim;
  Dim time = Dim::spatial("time"), in = Dim::feature("in", 3);
  retc::nn::Tensor x = b.extern_data("data", {Dim::batch(), time, in});
  auto net = b.set_root(std::make_shared<retc::nn::Linear>(in, Dim::feature("out", 5)));
#ifdef RETC_WRONG_TYPE
  std::map<std::string, retc::nn::Tensor> inputs{{"foo", x}};
  net->forward(inputs).mark_as_output();
#else
  net->forward(x).mark_as_output();
#endif
}
