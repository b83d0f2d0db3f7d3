#include "runtime/returnn_session.h"

#include <pybind11/embed.h>

#include "absl/strings/str_cat.h"
#include "runtime/python_env.h"
#include "runtime/retc_runtime_py.h"

namespace py = pybind11;

namespace retc::runtime {
namespace {

absl::StatusOr<py::module_> runtime_module() {
  if (absl::Status s = start_python(); !s.ok()) return s;
  try {
    py::module_ sys = py::module_::import("sys");
    py::dict modules = sys.attr("modules");
    if (modules.contains("retc_runtime")) return py::reinterpret_borrow<py::module_>(modules["retc_runtime"]);
    py::module_ types = py::module_::import("types");
    py::module_ m = types.attr("ModuleType")("retc_runtime");
    m.attr("__file__") = "<retc_runtime>";
    modules["retc_runtime"] = m;
    py::exec(kRetcRuntimePy, m.attr("__dict__"));
    return m;
  } catch (const py::error_already_set& e) {
    return absl::InternalError(absl::StrCat("cannot load retc's Python runtime: ", e.what()));
  }
}

// One line: "ExceptionType: message" (the last line if multi-line).
absl::Status python_error(const py::error_already_set& e, absl::string_view what) {
  std::string type = "Exception";
  std::string msg;
  try {
    type = py::str(e.type().attr("__name__"));
    msg = py::str(e.value());
  } catch (...) {
    msg = e.what();
  }
  if (type == "KeyboardInterrupt") return absl::CancelledError(absl::StrCat(what, ": interrupted"));
  std::string line = msg;
  while (!line.empty() && (line.back() == '\n' || line.back() == ' ')) line.pop_back();
  if (size_t nl = line.rfind('\n'); nl != std::string::npos) line = line.substr(nl + 1);
  return absl::InternalError(absl::StrCat(what, ": ", type, line.empty() ? "" : ": ", line));
}

void flush_python() {
  try {
    py::module_ sys = py::module_::import("sys");
    sys.attr("stdout").attr("flush")();
    sys.attr("stderr").attr("flush")();
  } catch (const py::error_already_set&) {
  }
}

std::vector<Variable> to_variables(const py::handle& list) {
  std::vector<Variable> out;
  for (py::handle item : list) {
    auto t = item.cast<py::tuple>();
    Variable v{t[0].cast<std::string>(), {}};
    for (py::handle d : t[1]) v.shape.push_back(d.cast<int64_t>());
    out.push_back(std::move(v));
  }
  return out;
}

}  // namespace

absl::StatusOr<CheckResult> check_config(const std::string& config_path) {
  auto m = runtime_module();
  if (!m.ok()) return m.status();
  try {
    py::tuple r = m->attr("check")(config_path);
    flush_python();
    return CheckResult{to_variables(r[0]), to_variables(r[1])};
  } catch (const py::error_already_set& e) {
    flush_python();
    return python_error(e, "RETURNN check failed");
  }
}

absl::StatusOr<TrainResult> train_config(const std::string& config_path) {
  auto m = runtime_module();
  if (!m.ok()) return m.status();
  try {
    py::tuple r = m->attr("train")(config_path);
    flush_python();
    TrainResult out;
    out.last_epoch = r[0].cast<int64_t>();
    for (py::handle item : r[1]) {
      auto t = item.cast<py::tuple>();
      out.scores.emplace_back(t[0].cast<std::string>(), t[1].cast<double>());
    }
    return out;
  } catch (const py::error_already_set& e) {
    flush_python();
    return python_error(e, "RETURNN training failed");
  }
}

}  // namespace retc::runtime
