// fibermpi._core.Group: fiber::Group running a Python target through run_python_group_member,
// and what a member asks of its membership. fibermpi/group.py gives it its Python API.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "bindings.h"
#include "fiber/group.h"
#include "fiber/mpi.h"
#include "gil.h"
#include "task_entry.h"

namespace fibermpi::binding {
namespace {

class GroupHandle {
 public:
  GroupHandle(int size, int max_restarts, std::string payload, std::vector<uint64_t> produces)
      : group_(std::in_place, fiber::Group::Options{size, max_restarts}, run_python_group_member,
               ProcessPayload{std::move(payload), std::move(produces)}) {}
  GroupHandle(const GroupHandle&) = delete;
  GroupHandle& operator=(const GroupHandle&) = delete;
  // The last copy of a started fiber::Group waits for its end: without the GIL, so that the
  // program's other threads go on meanwhile.
  ~GroupHandle() {
    py::gil_scoped_release unlocked;
    group_.reset();
  }

  void start() {
    py::gil_scoped_release unlocked;
    group_->start();
  }
  /// True when it has ended (within `timeout` seconds; none waits for good).
  bool join(std::optional<double> timeout) {
    return wait_interruptibly(
        timeout, [this](std::chrono::nanoseconds slice) { return group_->join(slice); });
  }
  void terminate() {
    py::gil_scoped_release unlocked;
    group_->terminate();
  }
  int size() const { return group_->size(); }
  int restarts() const {
    py::gil_scoped_release unlocked;
    return group_->restarts();
  }
  std::vector<std::optional<int>> exitcodes() const {
    py::gil_scoped_release unlocked;
    return group_->exitcodes();
  }
  std::vector<int> member_pids() const {
    py::gil_scoped_release unlocked;
    return group_->member_pids();
  }

 private:
  std::optional<fiber::Group> group_;
};

}  // namespace

void bind_group(py::module_& m) {
  py::class_<GroupHandle>(m, "Group")
      .def(py::init<int, int, std::string, std::vector<uint64_t>>(), py::arg("size"),
           py::arg("max_restarts"), py::arg("payload"), py::arg("produces"))
      .def("start", &GroupHandle::start)
      .def("join", &GroupHandle::join, py::arg("timeout") = py::none())
      .def("terminate", &GroupHandle::terminate)
      .def("size", &GroupHandle::size)
      .def("restarts", &GroupHandle::restarts)
      .def("exitcodes", &GroupHandle::exitcodes)
      .def("member_pids", &GroupHandle::member_pids);
  m.def(
      "group_membership",
      [] {
        // The communicator as its Fortran handle: an int whatever MPI_Comm is in this MPI (a
        // pointer in Open MPI, an int in MPICH), which mpi4py turns back with f2py.
        const int rank = fiber::group_rank();
        return std::make_tuple(rank, fiber::group_size(), fiber::group_restarts(),
                               static_cast<int64_t>(MPI_Comm_c2f(fiber::group_comm())));
      },
      "(rank, size, restarts, Fortran handle of the communicator) of the group member this code "
      "runs in; fibermpi.UsageError outside a member");
}

}  // namespace fibermpi::binding
