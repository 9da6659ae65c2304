// The parts of fibermpi._core, each bound in its own file.
#pragma once

#include <pybind11/pybind11.h>

namespace fibermpi::binding {

namespace py = pybind11;

void bind_runtime(py::module_& m);
void bind_pool(py::module_& m);
void bind_process(py::module_& m);
void bind_queue(py::module_& m);
void bind_manager(py::module_& m);
void bind_group(py::module_& m);

}  // namespace fibermpi::binding
