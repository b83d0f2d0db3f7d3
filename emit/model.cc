#include "emit/model.h"

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "compiler/nn/error.h"

namespace retc {

emit::ConfigOptions config_options(const ModelDef& def, const std::string& model_dir) {
  emit::ConfigOptions opts;
  opts.model_name = def.name;
  opts.training = def.training;
  opts.model_path = model_dir + "/network";
  opts.training.extra.emplace_back("learning_rate_file", model_dir + "/learning_rates");
  return opts;
}

absl::Status select_task(ir::Graph& g, emit::Task task, const std::string& model_name) {
  using K = ir::Mark::Kind;
  auto wanted = [task](const ir::Mark& m) {
    switch (task) {
      case emit::Task::kTrain:
      case emit::Task::kEval:
        return m.kind != K::kSearch;
      case emit::Task::kForward:
        return m.kind == K::kOutput;
      case emit::Task::kSearch:
        return m.kind == K::kSearch;
    }
    return false;
  };
  g.keep_marks(wanted);
  if (!g.marks().empty()) return absl::OkStatus();
  switch (task) {
    case emit::Task::kForward:
      return absl::FailedPreconditionError(absl::StrCat(
          "model '", model_name, "' marks no output to forward (nn::Tensor::mark_as_output)"));
    case emit::Task::kSearch:
      return absl::FailedPreconditionError(
          absl::StrCat("model '", model_name,
                       "' has no search output to decode (mark the decoded labels with "
                       "nn::Tensor::mark_as_search_output)"));
    case emit::Task::kTrain:
    case emit::Task::kEval:
      break;
  }
  return absl::FailedPreconditionError(
      absl::StrCat("model '", model_name, "' has no loss and no output"));
}

absl::Status check_data_files(const ModelDef& def) {
  for (const std::string& f : def.data_files) {
    std::error_code ec;
    if (std::filesystem::exists(f, ec)) continue;
    return absl::NotFoundError(absl::StrCat("model '", def.name, "' reads ", f,
                                            ", which does not exist: ", def.how_to_make));
  }
  return absl::OkStatus();
}

int stage_of_epoch(const ModelDef& def, int64_t epoch) {
  int stage = 0;
  while (stage < static_cast<int>(def.stage_epochs.size()) && epoch >= def.stage_epochs[stage])
    ++stage;
  return stage;
}

absl::StatusOr<ir::Graph> build_model(const ModelDef& def, int stage) {
  const int last = static_cast<int>(def.stage_epochs.size());
  if (stage < 0) stage = last;
  if (stage > last) {
    return absl::InvalidArgumentError(
        absl::StrCat("model '", def.name, "' has no pretraining stage ", stage));
  }
  for (size_t i = 0; i < def.stage_epochs.size(); ++i) {
    if (def.stage_epochs[i] < 2 || (i > 0 && def.stage_epochs[i] <= def.stage_epochs[i - 1])) {
      return absl::InvalidArgumentError(absl::StrCat(
          "model '", def.name,
          "': stage_epochs must increase from at least epoch 2 (each stage's first epoch)"));
    }
  }
  ir::Graph g;
  nn::Builder b(g, stage, stage == 0 ? 1 : def.stage_epochs[stage - 1]);
  try {
    def.build(b);
    b.finish();
  } catch (const nn::ModelError& e) {
    return e.status();
  }
  return g;
}

}  // namespace retc
