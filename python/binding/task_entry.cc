#include "task_entry.h"

#include <pybind11/pybind11.h>

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>

namespace fibermpi::binding {
namespace py = pybind11;
namespace {

// fibermpi._task's entry `name`, imported once per process (never released: tasks may run
// while the interpreter ends).
py::handle task_function(const char* name) {
  py::module_ module = py::module_::import("fibermpi._task");
  py::object function = module.attr(name);
  return function.release();
}

// A failure of fibermpi's own Python code (not the user's, which _task catches) as a C++
// exception the engine reports.
[[noreturn]] void rethrow_as_cpp(py::error_already_set& error) {
  std::string what = error.what();
  error.restore();
  PyErr_Clear();
  throw std::runtime_error("fibermpi's task runner failed: " + what);
}

// The engine sets CUDA_VISIBLE_DEVICES in the C environment before each Process or pool
// membership starts (the GPUs the master gave it); Python's os.environ is a copy taken when the
// interpreter started, so it is brought up to date before the user's code runs. With the GIL.
void sync_visible_gpus() {
  // Compared with os.environ each time: the user's code may have changed it since.
  static py::handle environ = py::object(py::module_::import("os").attr("environ")).release();
  const char* now = std::getenv("CUDA_VISIBLE_DEVICES");
  py::object seen = environ.attr("get")("CUDA_VISIBLE_DEVICES");
  if (now) {
    if (seen.is_none() || seen.cast<std::string>() != now) environ["CUDA_VISIBLE_DEVICES"] = now;
  } else if (!seen.is_none()) {
    environ.attr("pop")("CUDA_VISIBLE_DEVICES", py::none());
  }
}

}  // namespace

std::string run_python_task(std::string payload) {
  py::gil_scoped_acquire locked;
  static py::handle run = task_function("run_task");
  sync_visible_gpus();
  try {
    py::bytes outcome = run(py::bytes(payload));
    return std::string(outcome);
  } catch (py::error_already_set& error) {
    rethrow_as_cpp(error);
  }
}

void run_python_initializer(std::string payload) {
  py::gil_scoped_acquire locked;
  static py::handle run = task_function("run_initializer");
  sync_visible_gpus();
  try {
    run(py::bytes(payload));
  } catch (py::error_already_set& error) {
    rethrow_as_cpp(error);
  }
}

namespace {

// Runs fibermpi._task's `entry` on a Process's or a group member's pickled object and ends the
// process with the code it returns when that is not 0: sys.exit(n) with n != 0, or an uncaught
// exception (1), as the engine reports a C++ function that calls std::exit(n). Python's streams
// were flushed.
void run_to_exit_code(const char* entry, py::handle& cached, const std::string& bytes) {
  int code = 0;
  {
    py::gil_scoped_acquire locked;
    if (!cached) cached = task_function(entry);
    sync_visible_gpus();
    try {
      code = cached(py::bytes(bytes)).cast<int>();
    } catch (py::error_already_set& error) {
      rethrow_as_cpp(error);
    }
  }
  if (code != 0) {
    std::fflush(nullptr);
    std::exit(code);
  }
}

}  // namespace

void run_python_process(ProcessPayload payload) {
  static py::handle run;
  run_to_exit_code("run_process", run, payload.bytes);
}

void run_python_group_member(ProcessPayload payload) {
  static py::handle run;
  run_to_exit_code("run_group_member", run, payload.bytes);
}

}  // namespace fibermpi::binding
