// Test-only models: a tiny good one, ones with mistakes (each mistake's line
// is recorded so tests can check the reported file:line), and one with
// hostile names.
#pragma once

#include <vector>

#include "emit/model.h"

namespace retc::testing {

/// The training setup of the small test models: Task12AXDataset, 20 train
/// and 5 dev sequences.
emit::TrainingSetup small_training();

/// The source line of the mistake in model `name`, or 0.
int mistake_line(const std::string& name);

/// Every test model: the ones of test_models.cc and param_test_models().
std::vector<ModelDef> test_models();

/// Models for parameter options and reparametrizations (param_models.cc).
std::vector<ModelDef> param_test_models();

/// Module-library test models (module_models.cc).
std::vector<ModelDef> module_test_models();

/// Fresh random numbers and SpecAugment (random_models.cc).
std::vector<ModelDef> random_test_models();

/// Models RETURNN once rejected after retc accepted them (rq_models.cc).
std::vector<ModelDef> rq_test_models();

/// Every op and module in the plain, broadcast and loop situations (sweep_models.cc).
std::vector<ModelDef> sweep_test_models();
/// The module-API fuzzer's model of a seed (tests/module_fuzz_models.cc), and
/// the models "fuzz:SEED" of RETC_MODULE_FUZZ_MODELS=FIRST:COUNT (none unset).
void build_fuzz_model(nn::Builder& b, uint64_t seed);
std::vector<ModelDef> fuzz_test_models();

/// Models with one mistake each, named "bad:...", whose description is the
/// expected error message (bad_model_cases.cc).
std::vector<ModelDef> bad_model_cases();

}  // namespace retc::testing
