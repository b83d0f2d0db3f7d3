// retc_bench_compile: times retc's compile of one model (build + passes +
// emit), repeated, and prints one JSON line. tools/bench.py runs it once per
// model in a child process (to read that process's peak RSS) and makes the
// table; see README "Benchmarks".
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "compiler/nn/builder.h"
#include "compiler/nn/modules.h"
#include "compiler/pipeline.h"
#include "configs/bundled.h"
#include "emit/config.h"
#include "emit/model.h"
#include "emit/target.h"
#include "emit/tf/target.h"
#include "emit/torch/target.h"
#include "nlohmann/json.hpp"

namespace retc {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// The stress model: `layers` residual blocks y = x + tanh(x·W + b) over a
// 64-dim feature, about 6 nodes each, then a softmax cross-entropy.
ModelDef stress_model(int64_t layers) {
  ModelDef def;
  def.name = "stress";
  def.description = "residual tanh stack for compile benchmarks";
  def.build = [layers](nn::Builder& b) {
    ir::Dim time = ir::Dim::spatial("time"), hidden = ir::Dim::feature("hidden", 64);
    ir::Dim classes = ir::Dim::feature("classes", 10);
    nn::Tensor x = b.extern_data("data", {ir::Dim::batch(), time, hidden});
    nn::Tensor y = b.extern_data("classes", {ir::Dim::batch(), time}, ir::DType::kInt32, classes);
    auto root = std::make_shared<nn::ModuleList>();
    for (int64_t i = 0; i < layers; ++i) root->append(std::make_shared<nn::Linear>(hidden, hidden));
    auto out = root->append(std::make_shared<nn::Linear>(hidden, classes));
    b.set_root(root);
    nn::Tensor h = x;
    for (int64_t i = 0; i < layers; ++i) h = h + nn::tanh(root->at<nn::Linear>(i)->forward(h));
    nn::softmax_cross_entropy(out->forward(h), y).mark_as_loss("ce");
  };
  def.training.train = emit::PyValue::dict({{"class", "Task12AXDataset"}, {"num_seqs", 10}});
  def.training.dev = def.training.train;
  return def;
}

int usage() {
  std::cerr
      << "usage: retc_bench_compile (--conformer BLOCKS [--weight-norm] [--dropout-broadcast]\n"
         "                           | --stress LAYERS)\n"
         "                          [--repeat N] [--write-config PATH] [--backend tf|torch]\n"
         "Compiles the model N times (default 5): build, passes, emit; prints a JSON line\n"
         "with the median and each phase's median in milliseconds and the node count.\n";
  return 2;
}

int run(int argc, char** argv) {
  int64_t blocks = -1, stress = -1, repeat = 5;
  bool weight_norm = false, dropout_broadcast = false;
  std::string write_path;
  const emit::Target* target = &emit::tf::target();
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next_int = [&](int64_t& out) { return i + 1 < argc && absl::SimpleAtoi(argv[++i], &out); };
    if (a == "--conformer") {
      if (!next_int(blocks)) return usage();
    } else if (a == "--stress") {
      if (!next_int(stress)) return usage();
    } else if (a == "--repeat") {
      if (!next_int(repeat) || repeat < 1) return usage();
    } else if (a == "--weight-norm") {
      weight_norm = true;
    } else if (a == "--dropout-broadcast") {
      dropout_broadcast = true;
    } else if (a == "--write-config" && i + 1 < argc) {
      write_path = argv[++i];
    } else if (a == "--backend" && i + 1 < argc) {
      std::string b = argv[++i];
      if (b == "torch") {
        target = &emit::torch::target();
      } else if (b != "tf") {
        return usage();
      }
    } else {
      return usage();
    }
  }
  if ((blocks < 0) == (stress < 0)) return usage();
  ModelDef def = blocks >= 0 ? configs::conformer_ctc_model(blocks, weight_norm, dropout_broadcast)
                             : stress_model(stress);
  emit::ConfigOptions opts = config_options(def);
  std::vector<double> build_ms, passes_ms, emit_ms, total_ms;
  size_t nodes_built = 0, nodes_emitted = 0, params = 0;
  std::string config;
  for (int64_t r = 0; r < repeat; ++r) {
    auto t0 = Clock::now();
    absl::StatusOr<ir::Graph> g = build_model(def);
    if (!g.ok()) {
      std::cerr << "retc_bench_compile: " << g.status().message() << "\n";
      return 1;
    }
    double t_build = ms_since(t0);
    nodes_built = g->size();
    auto t1 = Clock::now();
    if (absl::Status s = run_passes(*g, emit::pipeline(*target)); !s.ok()) {
      std::cerr << "retc_bench_compile: " << s.message() << "\n";
      return 1;
    }
    double t_passes = ms_since(t1);
    auto t2 = Clock::now();
    absl::StatusOr<std::string> c = target->write_config(*g, opts);
    if (!c.ok()) {
      std::cerr << "retc_bench_compile: " << c.status().message() << "\n";
      return 1;
    }
    double t_emit = ms_since(t2);
    build_ms.push_back(t_build);
    passes_ms.push_back(t_passes);
    emit_ms.push_back(t_emit);
    total_ms.push_back(ms_since(t0));
    nodes_emitted = g->size();
    params = g->params().size();
    config = *std::move(c);
  }
  if (!write_path.empty()) {
    std::ofstream f(write_path, std::ios::binary);
    f << config;
    if (!f.flush()) {
      std::cerr << "retc_bench_compile: cannot write " << write_path << "\n";
      return 1;
    }
  }
  nlohmann::json j{{"model", def.name},
                   {"blocks", blocks},
                   {"stress_layers", stress},
                   {"repeat", repeat},
                   {"nodes_built", nodes_built},
                   {"nodes_emitted", nodes_emitted},
                   {"params", params},
                   {"config_bytes", config.size()},
                   {"total_ms_median", median(total_ms)},
                   {"build_ms_median", median(build_ms)},
                   {"passes_ms_median", median(passes_ms)},
                   {"emit_ms_median", median(emit_ms)}};
  std::cout << j.dump() << "\n";
  return 0;
}

}  // namespace
}  // namespace retc

int main(int argc, char** argv) { return retc::run(argc, argv); }
