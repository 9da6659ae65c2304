#include "task_entry.h"

#include <pybind11/pybind11.h>

#include <cstdio>
#include <cstdlib>
#include <stdexcept>

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

}  // namespace

std::string run_python_task(std::string payload) {
  py::gil_scoped_acquire locked;
  static py::handle run = task_function("run_task");
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
  try {
    run(py::bytes(payload));
  } catch (py::error_already_set& error) {
    rethrow_as_cpp(error);
  }
}

void run_python_process(ProcessPayload payload) {
  int code = 0;
  {
    py::gil_scoped_acquire locked;
    static py::handle run = task_function("run_process");
    try {
      code = run(py::bytes(payload.bytes)).cast<int>();
    } catch (py::error_already_set& error) {
      rethrow_as_cpp(error);
    }
  }
  // sys.exit(n) with n != 0, or an uncaught exception (1): the process ends with that code, as
  // the engine reports a C++ Process that calls std::exit(n). Python's streams were flushed.
  if (code != 0) {
    std::fflush(nullptr);
    std::exit(code);
  }
}

}  // namespace fibermpi::binding
