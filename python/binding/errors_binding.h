// fibermpi's C++ exceptions as the Python front end's exceptions (fibermpi.errors).
#pragma once

#include <pybind11/pybind11.h>

#include <exception>

#include "fiber/errors.h"

namespace fibermpi::binding {

namespace py = pybind11;

/// Makes pybind11 raise fibermpi.errors' classes for fiber::Error and its kinds.
void register_error_translation();

/// The Python exception (an instance) for a C++ exception; the GIL must be held.
py::object python_exception(const std::exception_ptr& error);
/// The same for one of fibermpi's errors held by reference (an error callback's): the Python
/// class of its own kind (fibermpi.TerminatedError, WorkerLost, ...), not of fiber::Error.
py::object python_exception(const fiber::Error& error);

}  // namespace fibermpi::binding
