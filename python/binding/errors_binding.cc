#include "errors_binding.h"

#include <string>
#include <utility>

#include "fiber/errors.h"

namespace fibermpi::binding {
namespace {

// The class of fibermpi.errors for a C++ exception, and its message.
std::pair<py::object, std::string> python_class_of(const std::exception_ptr& error) {
  py::module_ errors = py::module_::import("fibermpi.errors");
  try {
    std::rethrow_exception(error);
  } catch (const fiber::ConfigError& e) {
    return {errors.attr("ConfigError"), e.what()};
  } catch (const fiber::UsageError& e) {
    return {errors.attr("UsageError"), e.what()};
  } catch (const fiber::Full& e) {
    return {py::module_::import("queue").attr("Full"), e.what()};
  } catch (const fiber::Empty& e) {
    return {py::module_::import("queue").attr("Empty"), e.what()};
  } catch (const fiber::EOFError& e) {
    return {py::module_::import("builtins").attr("EOFError"), e.what()};
  } catch (const fiber::TimeoutError& e) {
    return {errors.attr("TimeoutError"), e.what()};
  } catch (const fiber::WorkerLost& e) {
    return {errors.attr("WorkerLost"), e.what()};
  } catch (const fiber::SpawnError& e) {
    return {errors.attr("SpawnError"), e.what()};
  } catch (const fiber::TerminatedError& e) {
    return {errors.attr("TerminatedError"), e.what()};
  } catch (const fiber::RemoteError& e) {
    return {errors.attr("RemoteError"), e.what()};
  } catch (const fiber::BrokenBarrierError& e) {
    return {py::module_::import("threading").attr("BrokenBarrierError"), e.what()};
  } catch (const fiber::Error& e) {
    return {errors.attr("Error"), e.what()};
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
