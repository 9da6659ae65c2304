// fibermpi's C++ exceptions as the Python front end's exceptions (fibermpi.errors).
#pragma once

#include <pybind11/pybind11.h>

#include <exception>

namespace fibermpi::binding {

namespace py = pybind11;

/// Makes pybind11 raise fibermpi.errors' classes for fiber::Error and its kinds.
void register_error_translation();

/// The Python exception (an instance) for a C++ exception; the GIL must be held.
py::object python_exception(const std::exception_ptr& error);

}  // namespace fibermpi::binding
