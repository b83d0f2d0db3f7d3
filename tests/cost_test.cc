// The static cost analysis (compiler/cost.h) on graphs whose cost is worked
// out by hand. (tests/integration/test_stats.py holds it to torch.)
#include "compiler/cost.h"

#include <catch2/catch.hpp>

#include "ir/parser.h"

namespace retc {
namespace {

constexpr char kMlp[] = R"(dim in_dim = feature "in" 4
dim hidden_dim = feature "hidden" 8
dim classes_dim = feature "classes" 3
dim time_dim = spatial "time"
param @0 "l1.weight" : [in_dim, hidden_dim] float32 kind=weight init=constant(0.0)
param @1 "l2.weight" : [hidden_dim, classes_dim] float32 kind=weight init=constant(0.0)
%0 = data {key="data"} : [batch_dim, time_dim, in_dim] float32 stage=step
%1 = data {key="classes"} : [batch_dim, time_dim] int32 sparse classes_dim stage=step
%2 = param @0 : [in_dim, hidden_dim] float32 stage=step module="l1"
%3 = param @1 : [hidden_dim, classes_dim] float32 stage=step module="l2"
%4 = dot %0, %2 {reduce=[in_dim]} : [batch_dim, time_dim, hidden_dim] float32 stage=step module="l1"
%5 = activation %4 {func="relu"} : [batch_dim, time_dim, hidden_dim] float32 stage=step
%6 = dot %5, %3 {reduce=[hidden_dim]} : [batch_dim, time_dim, classes_dim] float32 stage=step module="l2"
%7 = softmax_ce %6, %1 : [batch_dim, time_dim] float32 stage=step
loss "ce" = %7
)";

TEST_CASE("cost: a two-layer MLP, counted by hand") {
  auto g = ir::parse(kMlp, "mlp.ir");
  REQUIRE(g.ok());
  CostOptions opts;
  opts.batch = 2;
  opts.frames = 10;
  auto r = analyze_cost(*g, opts);
  REQUIRE(r.ok());
  REQUIRE(r->modules.size() == 3);  // "", l1, l2
  const ModuleCost& total = r->modules[0];
  CHECK(r->input_frames == 20);
  CHECK(total.params == 4 * 8 + 8 * 3);
  // l1: 2 * 20 frames * 4 * 8; relu 20 * 8; l2: 2 * 20 * 8 * 3; the loss
  // 4 per logit (20 * 3).
  CHECK(total.forward_flops == 1280 + 160 + 960 + 240);
  // l1's input is data: only its weight's gradient; l2: both operands.
  CHECK(total.backward_flops == 1280 + 160 + 2 * 960 + 240);
  // Kept: the data (l1's weight gradient), the relu's output, the logits.
  CHECK(total.activation_bytes == 4 * (20 * 4 + 20 * 8 + 20 * 3));
  CHECK(r->modules[1].path == "l1");
  CHECK(r->modules[1].forward_flops == 1280);
  CHECK(r->modules[2].params == 8 * 3);
  CHECK(r->assumed.empty());
}

constexpr char kStrided[] = R"(dim in_dim = feature "in" 1
dim out_dim = feature "out" 2
dim kernel_dim = spatial "kernel" 3
dim time_dim = spatial "time"
dim time_s4_dim = spatial "time_s4"
dim labels_dim = spatial "labels"
param @0 "conv.weight" : [kernel_dim, in_dim, out_dim] float32 kind=weight init=constant(0.0)
param @1 "conv.bias" : [out_dim] float32 kind=bias init=constant(0.0)
%0 = data {key="data"} : [batch_dim, time_dim, in_dim] float32 stage=step
%1 = param @0 : [kernel_dim, in_dim, out_dim] float32 stage=step module="conv"
%2 = param @1 : [out_dim] float32 stage=step module="conv"
%3 = conv %0, %1, %2 {axes=[time_dim], out_axes=[time_s4_dim], strides=(4), dilation=1, padding="valid", groups=1} : [batch_dim, time_s4_dim, out_dim] float32 stage=step module="conv"
output "output" = %3
)";

TEST_CASE("cost: a strided conv's frames follow from its input's") {
  auto g = ir::parse(kStrided, "strided.ir");
  REQUIRE(g.ok());
  CostOptions opts;
  opts.frames = 101;  // valid: (101 - 3) / 4 + 1 = 25 frames
  auto r = analyze_cost(*g, opts);
  REQUIRE(r.ok());
  CHECK(r->modules[0].forward_flops == 2 * 25 * 2 * 3 + 25 * 2);  // and the bias
  CHECK(r->modules[0].backward_flops == 0);                       // no loss: no backward
  CHECK(r->modules[0].activation_bytes == 0);
  CHECK(r->assumed.empty());
}

}  // namespace
}  // namespace retc
