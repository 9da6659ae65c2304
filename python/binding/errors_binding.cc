#include "errors_binding.h"

#include <string>
#include <utility>

#include "fiber/errors.h"

namespace fibermpi::binding {
namespace {

template <class Kind>
bool is_a(const fiber::Error& error) {
  return dynamic_cast<const Kind*>(&error) != nullptr;
}

// The class of fibermpi.errors for a C++ exception of fibermpi's (by its dynamic type: an error
// callback gets the error by reference), and its message.
std::pair<py::object, std::string> python_class_of(const fiber::Error& error) {
  py::module_ errors = py::module_::import("fibermpi.errors");
  std::string message = error.what();
  if (is_a<fiber::ConfigError>(error)) return {errors.attr("ConfigError"), message};
  if (is_a<fiber::UsageError>(error)) return {errors.attr("UsageError"), message};
  if (is_a<fiber::Full>(error)) return {py::module_::import("queue").attr("Full"), message};
  if (is_a<fiber::Empty>(error)) return {py::module_::import("queue").attr("Empty"), message};
  if (is_a<fiber::EOFError>(error))
    return {py::module_::import("builtins").attr("EOFError"), message};
  if (is_a<fiber::TimeoutError>(error)) return {errors.attr("TimeoutError"), message};
  if (is_a<fiber::WorkerLost>(error)) return {errors.attr("WorkerLost"), message};
  if (is_a<fiber::SpawnError>(error)) return {errors.attr("SpawnError"), message};
  if (is_a<fiber::TerminatedError>(error)) return {errors.attr("TerminatedError"), message};
  if (is_a<fiber::RemoteError>(error)) return {errors.attr("RemoteError"), message};
  if (is_a<fiber::BrokenBarrierError>(error))
    return {py::module_::import("threading").attr("BrokenBarrierError"), message};
  return {errors.attr("Error"), message};
}

std::pair<py::object, std::string> python_class_of(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const fiber::Error& e) {
    return python_class_of(e);
  }
}

}  // namespace

py::object python_exception(const std::exception_ptr& error) {
  try {
    auto [type, message] = python_class_of(error);
    return type(message);
  } catch (const std::exception& e) {
    return py::module_::import("builtins").attr("RuntimeError")(std::string(e.what()));
  }
}

py::object python_exception(const fiber::Error& error) {
  auto [type, message] = python_class_of(error);
  return type(message);
}

void register_error_translation() {
  py::register_exception_translator([](std::exception_ptr error) {
    if (!error) return;
    try {
      std::rethrow_exception(error);
    } catch (const fiber::Error&) {
      auto [type, message] = python_class_of(error);
      PyErr_SetString(type.ptr(), message.c_str());
    }
    // Anything else goes on to pybind11's own translators.
  });
}

}  // namespace fibermpi::binding
