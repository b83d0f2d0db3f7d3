// The target boundary: the backend table, and what a target does with a
// kind it cannot lower (an internal error naming kind and target, never a
// silent layer).
#include "emit/target.h"

#include <catch2/catch.hpp>

#include "absl/strings/match.h"
#include "emit/tf/naming.h"
#include "emit/tf/target.h"
#include "ir/parser.h"

namespace retc {
namespace {

// IR with a weight_norm node that expand-parametrizations would have
// rewritten: given straight to the TF emitter (after naming only).
constexpr char kUnexpanded[] = R"(dim time_dim = spatial "time"
dim in_dim = feature "in" 4
dim out_dim = feature "out" 3
param @0 "lin.weight" : [in_dim, out_dim] float32 kind=weight init=constant(0.5)
%0 = data {key="data"} : [batch_dim, time_dim, in_dim] float32 stage=step
%1 = param @0 : [in_dim, out_dim] float32 stage=step module="lin"
%2 = weight_norm %1 {axes=[in_dim]} : [in_dim, out_dim] float32 stage=step module="lin"
%3 = dot %0, %2 {reduce=[in_dim]} : [batch_dim, time_dim, out_dim] float32 stage=step module="lin"
output "output" = %3
)";

// Parses `ir`, names it (tf-naming only: no other pass) and emits it with
// the TF target; the emitter must refuse with an internal error containing
// `expected`.
void check_refused(const char* ir, const std::string& expected) {
  auto g = ir::parse(ir, "refused.ir");
  REQUIRE(g.ok());
  REQUIRE(emit::tf::naming(*g).ok());
  auto text = emit::tf::target().write_config(*g, emit::ConfigOptions{});
  REQUIRE(!text.ok());
  CHECK(text.status().code() == absl::StatusCode::kInternal);
  CHECK_THAT(std::string(text.status().message()), Catch::Contains(expected));
}

TEST_CASE("a kind the TF target cannot lower is an internal error naming kind and target") {
  check_refused(kUnexpanded, "target 'tf' cannot lower a weight_norm node");
}

TEST_CASE("weight noise that tf-legalize would reject is an internal error in the emitter") {
  // Noise of a dropped-out weight: RETURNN's variable applies noise first.
  constexpr char kNoise[] = R"(dim time_dim = spatial "time"
dim in_dim = feature "in" 4
dim out_dim = feature "out" 3
param @0 "lin.weight" : [in_dim, out_dim] float32 kind=weight init=constant(0.5)
%0 = data {key="data"} : [batch_dim, time_dim, in_dim] float32 stage=step
%1 = param @0 : [in_dim, out_dim] float32 stage=step module="lin"
%2 = weight_dropout %1 {rate=0.1} : [in_dim, out_dim] float32 stage=step module="lin"
%3 = weight_noise %2 {stddev=0.1} : [in_dim, out_dim] float32 stage=step module="lin"
%4 = dot %0, %3 {reduce=[in_dim]} : [batch_dim, time_dim, out_dim] float32 stage=step module="lin"
output "output" = %4
)";
  check_refused(kNoise, "target 'tf' cannot lower a weight_noise node");
}

TEST_CASE("the TF target's passes follow the neutral ones") {
  std::vector<std::string> names;
  for (const PassInfo* p : emit::pipeline(emit::tf::target())) names.emplace_back(p->name);
  CHECK(names == std::vector<std::string>{"assign-stages", "lower-init", "expand-parametrizations",
                                          "dce", "tf-legalize", "tf-naming"});
}

}  // namespace
}  // namespace retc
