// The retc command line, for any table of models: the bundled `retc` binary
// and users' own model executables (cmake/RetcModel.cmake) share it.
//
//   std::vector<retc::ModelDef> my_models() { return {my_model()}; }
//   int main(int argc, char** argv) { return retc::run_cli(argc, argv, my_models); }
#pragma once

#include <functional>
#include <vector>

#include "emit/model.h"

namespace retc {

/// The binary's models, made when a command needs them: in the command's own
/// process, or in a warm server's child for it (`retc serve`) after it took
/// the command's environment, which a model may read.
using ModelTable = std::function<std::vector<ModelDef>()>;

/// Exit codes: 0 success, 1 error (bad model, failed write, RETURNN error),
/// 2 usage error, 130 interrupted (Ctrl-C).
int run_cli(int argc, char** argv, const ModelTable& models);

/// The same over models made before the command is known: they run in this
/// process only (RETC_SERVER does not apply; `retc serve` is an error).
int run_cli(int argc, char** argv, const std::vector<ModelDef>& models);

}  // namespace retc
