// Starting and ending the runtime from Python: fibermpi/runtime.py decides when (at import in a
// worker, at first use in the master) and passes the interpreter's command line.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "bindings.h"
#include "fiber/base/config_file.h"
#include "fiber/function_ref.h"
#include "fiber/init.h"
#include "fiber/pool.h"
#include "fiber/runtime/runtime.h"
#include "mpi_bridge/launch_environment.h"

namespace fibermpi::binding {
namespace {

/// Starts the runtime for an interpreter: `program` is the interpreter as the user started it
/// (sys.executable), `argv` the program's command line (the interpreter's arguments: a script
/// and its arguments), `worker_args` what makes the interpreter a worker when spawned (-m
/// fibermpi._worker), `settings` a YAML (JSON) mapping of fiber.yaml keys from fibermpi.init().
/// In a worker it never returns.
void start(std::string program, std::vector<std::string> argv, std::vector<std::string> worker_args,
           std::string settings) {
  fiber::detail::ModuleTable::set_program_path(program);
  fiber::internal::ResolvedConfig resolved;
  if (!settings.empty()) fiber::internal::apply_config_text(settings, "fibermpi.init()", resolved);
  fiber::Config config = resolved.config;
  if (config.spawn.executable.empty()) config.spawn.executable = program;
  worker_args.insert(worker_args.end(), config.spawn.args.begin(), config.spawn.args.end());
  config.spawn.args = std::move(worker_args);
  // fiber::init keeps argv's strings for the life of the process (a worker never returns).
  static std::vector<std::string> words;
  static std::vector<char*> pointers;
  words = std::move(argv);
  words.insert(words.begin(), program);
  pointers.clear();
  for (auto& word : words) pointers.push_back(word.data());
  pointers.push_back(nullptr);
  int argc = static_cast<int>(words.size());
  char** argv_pointer = pointers.data();
  py::gil_scoped_release unlocked;
  fiber::init(argc, argv_pointer, config);
}

}  // namespace

void bind_runtime(py::module_& m) {
  m.def("start", &start, py::arg("program"), py::arg("argv"), py::arg("worker_args"),
        py::arg("settings"));
  m.def("prepare_environment", &fiber::bridge::prepare_process_environment,
        "Sets what MPI's runtime needs in the environment (each variable unless already set), "
        "before another library (mpi4py) may initialise MPI");
  m.def("is_initialized", &fiber::is_initialized);
  m.def(
      "shutdown_before_exit",
      [] {
        if (fiber::internal::Runtime::exists())
          fiber::internal::Runtime::instance().shutdown_before_exit();
      },
      py::call_guard<py::gil_scoped_release>(),
      "Ends the runtime before the interpreter ends; MPI_Finalize waits for the process's exit, "
      "where the exit status is known");
  m.def("listen", &fiber::listen, py::call_guard<py::gil_scoped_release>());
  m.def("usable_physical_cores", &fiber::usable_physical_cores);
  m.def("default_pool_size", &fiber::default_pool_size);
}

}  // namespace fibermpi::binding
