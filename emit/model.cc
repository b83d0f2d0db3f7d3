#include "emit/model.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>

#include "absl/strings/str_cat.h"
#include "compiler/nn/error.h"

namespace retc {

emit::ConfigOptions config_options(const ModelDef& def, const std::string& model_dir) {
  emit::ConfigOptions opts;
  opts.model_name = def.name;
  opts.model_options = def.option_values.to_string();
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

absl::StatusOr<ModelDef> with_options(const ModelDef& def,
                                      const std::vector<std::string>& settings) {
  absl::StatusOr<OptionValues> values = parse_option_settings(def.options, settings, def.name);
  if (!values.ok()) return values.status();
  ModelDef out = def;
  for (size_t i = 0; i < out.options.size(); ++i)
    out.options[i].default_value = values->entries()[i].second;
  const bool same = !def.options.empty() && def.option_values.to_string() == values->to_string();
  out.option_values = *values;
  if (!def.configure || same) return out;
  try {
    def.configure(out, *values);
  } catch (const std::invalid_argument& e) {  // a value its type admits but the model does not
    return absl::InvalidArgumentError(absl::StrCat("model '", def.name, "': ", e.what()));
  } catch (const std::logic_error& e) {
    return absl::InternalError(absl::StrCat("model '", def.name, "': ", e.what()));
  }
  return out;
}

ModelDef derive(ModelDef def, std::function<void(ModelDef&)> change) {
  change(def);
  if (def.configure) {
    def.configure = [base = def.configure, change](ModelDef& d, const OptionValues& o) {
      base(d, o);
      change(d);
    };
  }
  return def;
}

ModelDef configured(ModelDef def) {
  def.option_values = OptionValues();  // made now, whatever it was made with before
  absl::StatusOr<ModelDef> out = with_options(def);
  if (!out.ok()) {
    std::fprintf(stderr, "retc: error: %s\n", std::string(out.status().message()).c_str());
    std::abort();
  }
  return *std::move(out);
}

std::vector<ModelOption> training_options(const emit::TrainingSetup& t) {
  return {
      float_option("learning_rate", t.learning_rate, "the learning rate (after any warm-up)", 0.0),
      int_option("epochs", t.num_epochs, "epochs to train (--epochs overrides it)", 1),
      int_option("batch_size", t.batch_size, "frames in a batch (RETURNN's batch_size)", 1),
      int_option("max_seqs", t.max_seqs, "sequences in a batch at most", 1),
      string_option("lr_schedule", "",
                    "a learning rate per step, piecewise linear: \"STEP:RATE,STEP:RATE,...\" "
                    "(replaces learning_rate and any warm-up over epochs)")};
}

void apply_training_options(const OptionValues& o, emit::TrainingSetup& t) {
  t.learning_rate = o.get_float("learning_rate");
  t.num_epochs = o.get_int("epochs");
  t.batch_size = o.get_int("batch_size");
  t.max_seqs = o.get_int("max_seqs");
  t.step_schedule.reset();
  if (const std::string& text = o.get_string("lr_schedule"); !text.empty()) {
    absl::StatusOr<emit::StepSchedule> s = emit::StepSchedule::parse(text);
    if (!s.ok())
      throw std::invalid_argument(absl::StrCat("option lr_schedule: ", s.status().message()));
    t.step_schedule = *s;
    // The config's learning_rate (RETURNN's base rate, in its logs): the largest rate.
    t.learning_rate = *std::max_element(s->rates.begin(), s->rates.end());
  }
}

ModelOption warmup_option(int64_t epochs, absl::string_view from) {
  return int_option("warmup_epochs", epochs,
                    absl::StrCat("epochs of a linear warm-up from ", from, " (0: none)"), 0);
}

void apply_warmup(const OptionValues& o, double from, emit::TrainingSetup& t) {
  const int64_t epochs = o.get_int("warmup_epochs");
  t.learning_rates = epochs > 0 ? emit::warmup_learning_rates(from, t.learning_rate, epochs)
                                : std::vector<double>();
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
