// Reparametrizations of module params, like torch.nn.utils.parametrize:
// registered after construction (before set_root), they turn every read of
// the param into a derived weight computed once per step; the param-init
// part (e.g. weight norm's g) is computed once. See "Stages" in DESIGN.md.
//
//   nn::weight_norm(*lin, "weight");          // w = g · v / ‖v‖
//   nn::weight_dropout(*lstm, "rec_weight", 0.2);
//
// Checkpoint names: weight dropout and noise rename nothing; weight norm keeps
// v under the param's own name and adds g as `<param>_g` (e.g.
// `lin.weight_g`, TF variable `lin/weight_g/param`).
#pragma once

#include <source_location>
#include <string>
#include <vector>

#include "compiler/nn/module.h"

namespace retc::nn {

/// w = g · v / ‖v‖, ‖·‖ over `axes` (default: every dim but the last, i.e.
/// per output unit for [in, out] weights). g is initialized to ‖initial(v)‖,
/// so the initial weight equals the unreparametrized one.
void weight_norm(Module& m, const std::string& param, std::vector<ir::Dim> axes = {},
                 std::source_location loc = std::source_location::current());

/// In training, dropout(w) with drop probability `rate` (scaled by
/// 1/(1-rate)); in evaluation, w.
void weight_dropout(Module& m, const std::string& param, double rate,
                    std::source_location loc = std::source_location::current());

/// In training, w + N(0, stddev²) noise, new at each step; in evaluation, w.
void weight_noise(Module& m, const std::string& param, double stddev,
                  std::source_location loc = std::source_location::current());

bool is_parametrized(Module& m, const std::string& param,
                     std::source_location loc = std::source_location::current());

/// Removes every reparametrization of `param` (before set_root).
void remove_parametrizations(Module& m, const std::string& param,
                             std::source_location loc = std::source_location::current());

}  // namespace retc::nn
