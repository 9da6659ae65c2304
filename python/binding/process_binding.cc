// fibermpi._core.Process: fiber::Process running a Python target through run_python_process.
// fibermpi/process.py gives it multiprocessing.Process's API.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "bindings.h"
#include "fiber/process.h"
#include "gil.h"
#include "task_entry.h"

namespace fibermpi::binding {
namespace {

class ProcessHandle {
 public:
  ProcessHandle(std::string payload, std::vector<uint64_t> produces)
      : process_(run_python_process, ProcessPayload{std::move(payload), std::move(produces)}) {}
  explicit ProcessHandle(fiber::Process process) : process_(std::move(process)) {}

  void start() {
    py::gil_scoped_release unlocked;
    process_.start();
  }
  /// True when it has ended (within `timeout` seconds; none waits for good).
  bool join(std::optional<double> timeout) {
    return wait_interruptibly(
        timeout, [this](std::chrono::nanoseconds slice) { return process_.join(slice); });
  }
  // Without the GIL, as every call that takes the runtime's lock.
  bool is_alive() const {
    py::gil_scoped_release unlocked;
    return process_.is_alive();
  }
  void terminate() {
    py::gil_scoped_release unlocked;
    process_.terminate();
  }
  void kill() {
    py::gil_scoped_release unlocked;
    process_.kill();
  }
  std::optional<int> exitcode() const {
    py::gil_scoped_release unlocked;
    return process_.exitcode();
  }
  int pid() {
    py::gil_scoped_release unlocked;
    return process_.pid();
  }
  std::string name() const { return process_.name(); }
  void set_name(std::string name) { process_.set_name(std::move(name)); }
  bool daemon() const { return process_.daemon(); }
  void set_daemon(bool daemon) { process_.set_daemon(daemon); }
  void set_resources(int cpus, uint64_t memory, int gpus) {
    py::gil_scoped_release unlocked;
    process_.set_resources(cpus, memory, gpus);
  }

 private:
  fiber::Process process_;
};

}  // namespace

void bind_process(py::module_& m) {
  py::class_<ProcessHandle>(m, "Process")
      .def(py::init<std::string, std::vector<uint64_t>>(), py::arg("payload"), py::arg("produces"))
      .def("start", &ProcessHandle::start)
      .def("join", &ProcessHandle::join, py::arg("timeout") = py::none())
      .def("is_alive", &ProcessHandle::is_alive)
      .def("terminate", &ProcessHandle::terminate)
      .def("kill", &ProcessHandle::kill)
      .def("exitcode", &ProcessHandle::exitcode)
      .def("pid", &ProcessHandle::pid)
      .def("name", &ProcessHandle::name)
      .def("set_name", &ProcessHandle::set_name)
      .def("daemon", &ProcessHandle::daemon)
      .def("set_daemon", &ProcessHandle::set_daemon)
      .def("set_resources", &ProcessHandle::set_resources, py::arg("cpus"), py::arg("memory"),
           py::arg("gpus"));
  m.def(
      "current_process",
      [] {
        fiber::Process self = fiber::current_process();
        return std::make_tuple(self.name(), self.pid());
      },
      "(name, pid) of the process this code runs in");
}

}  // namespace fibermpi::binding
