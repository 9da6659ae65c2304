// fibermpi._core: the binding module of the Python front end. Internal: programs use the
// fibermpi package, whose .py files give it multiprocessing's API and documentation.
#include <pybind11/pybind11.h>

#include "bindings.h"
#include "errors_binding.h"

PYBIND11_MODULE(_core, m) {
  m.doc() = "fibermpi's C++ engine (internal; use the fibermpi package)";
  fibermpi::binding::register_error_translation();
  fibermpi::binding::bind_runtime(m);
  fibermpi::binding::bind_pool(m);
  fibermpi::binding::bind_process(m);
  fibermpi::binding::bind_queue(m);
  fibermpi::binding::bind_manager(m);
  fibermpi::binding::bind_group(m);
}
