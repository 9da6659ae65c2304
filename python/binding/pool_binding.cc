// fibermpi._core.Pool and its results: fiber::Pool running Python tasks (pickled bytes in, pickled
// outcomes out) through run_python_task. fibermpi/pool.py gives them multiprocessing's API.
#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "bindings.h"
#include "errors_binding.h"
#include "fiber/pool.h"
#include "gil.h"
#include "task_entry.h"

namespace fibermpi::binding {
namespace {

using Outcome = std::string;

// Outcomes are pickled bytes: never decoded as text.
py::object to_python(const Outcome& outcome) { return py::bytes(outcome); }
py::object to_python(const std::vector<Outcome>& outcomes) {
  py::list list(outcomes.size());
  for (size_t i = 0; i < outcomes.size(); ++i) list[i] = py::bytes(outcomes[i]);
  return list;
}

// The outcome of one apply (T = Outcome) or of a whole map (T = a list of outcomes).
template <class T>
class Result {
 public:
  explicit Result(fiber::AsyncResult<T> result) : result_(std::move(result)) {}

  py::object get(std::optional<double> timeout) {
    if (!wait(timeout)) throw fiber::TimeoutError("the result did not arrive within the timeout");
    T value;
    {
      py::gil_scoped_release unlocked;
      value = result_.get();
    }
    return to_python(value);
  }
  bool wait(std::optional<double> timeout) {
    return wait_interruptibly(
        timeout, [this](std::chrono::nanoseconds slice) { return result_.wait(slice); });
  }
  // Without the GIL, as every call that takes the runtime's lock: a thread of fibermpi's holding
  // that lock may be waiting for the GIL.
  bool ready() const {
    py::gil_scoped_release unlocked;
    return result_.ready();
  }
  bool successful() const {
    py::gil_scoped_release unlocked;
    return result_.successful();
  }
  /// `done(True, value)` or `done(False, exception)` once the result is in, on the pool's
  /// callback thread (or at once, here, when it already is).
  void when_done(py::function done) {
    auto held = std::make_shared<HeldObject>(std::move(done));
    auto on_value = [held](const T& value) {
      if (!Py_IsInitialized() || _Py_IsFinalizing()) return;
      py::gil_scoped_acquire locked;
      try {
        held->get()(true, to_python(value));
      } catch (py::error_already_set& error) {
        error.discard_as_unraisable("fibermpi: a result callback");
      }
    };
    auto on_error = [held](const fiber::Error& failure) {
      if (!Py_IsInitialized() || _Py_IsFinalizing()) return;
      py::gil_scoped_acquire locked;
      try {
        held->get()(false, python_exception(failure));
      } catch (py::error_already_set& error) {
        error.discard_as_unraisable("fibermpi: an error callback");
      }
    };
    py::gil_scoped_release unlocked;
    result_.on_success(on_value);
    result_.on_error(on_error);
  }

 private:
  fiber::AsyncResult<T> result_;
};

using ApplyResult = Result<Outcome>;
using MapResult = Result<std::vector<Outcome>>;

// imap and imap_unordered: one outcome per chunk, in input or completion order.
class Stream {
 public:
  explicit Stream(fiber::ResultStream<Outcome> stream) : stream_(std::move(stream)) {}

  /// The next outcome; None after the last. Raises fibermpi.TimeoutError after `timeout`.
  std::optional<py::bytes> next(std::optional<double> timeout) {
    std::optional<Outcome> item;
    bool ended = false;
    const bool arrived =
        wait_interruptibly(timeout, [this, &item, &ended](std::chrono::nanoseconds slice) {
          try {
            item = stream_.next(slice);
            ended = !item;
            return true;
          } catch (const fiber::TimeoutError&) {
            return false;
          }
        });
    if (!arrived) throw fiber::TimeoutError("the next result did not arrive within the timeout");
    if (ended) return std::nullopt;
    return py::bytes(*item);
  }

 private:
  fiber::ResultStream<Outcome> stream_;
};

class PoolHandle {
 public:
  PoolHandle(int processes, std::optional<std::string> initializer, uint64_t maxtasksperchild,
             int max_task_retries, std::optional<std::tuple<int, int, double>> autoscale,
             int cpus_per_worker, uint64_t memory_per_worker, int gpus_per_worker) {
    fiber::Pool::Options options;
    options.processes = processes;
    if (initializer) options.initializer.emplace(run_python_initializer, std::move(*initializer));
    options.maxtasksperchild = maxtasksperchild;
    // A Python program asking for maxtasksperchild wants each worker's state fresh: workers run
    // in processes the pool can replace (spawned ones), never in a rank that runs one after
    // another.
    options.fresh_processes = maxtasksperchild > 0;
    options.max_task_retries = max_task_retries;
    if (autoscale) {
      const auto& [min, max, idle_s] = *autoscale;
      options.autoscale = fiber::Pool::Options::Autoscale{
          min, max, std::chrono::milliseconds(static_cast<int64_t>(idle_s * 1000))};
    }
    options.cpus_per_worker = cpus_per_worker;
    options.memory_per_worker = memory_per_worker;
    options.gpus_per_worker = gpus_per_worker;
    py::gil_scoped_release unlocked;
    pool_.emplace(std::move(options));
  }

  fiber::Pool& pool() {
    if (!pool_) throw fiber::UsageError("the pool has been released");
    return *pool_;
  }
  int size() {
    auto& running = pool();
    py::gil_scoped_release unlocked;
    return running.size();
  }
  void wait_ready() {
    py::gil_scoped_release unlocked;
    pool().wait_ready();
  }
  void resize(int processes) {
    py::gil_scoped_release unlocked;
    pool().resize(processes);
  }
  std::vector<int> worker_pids() {
    auto& running = pool();
    py::gil_scoped_release unlocked;
    return running.worker_pids();
  }

  ApplyResult apply_async(std::string payload) {
    auto& running = pool();
    py::gil_scoped_release unlocked;
    return ApplyResult(running.apply_async(run_python_task, std::move(payload)));
  }
  MapResult map_async(std::vector<std::string> payloads) {
    auto& running = pool();
    py::gil_scoped_release unlocked;
    return MapResult(running.map_async(run_python_task, std::move(payloads), 1));
  }
  Stream imap(std::vector<std::string> payloads, bool ordered) {
    auto& running = pool();
    py::gil_scoped_release unlocked;
    if (ordered) return Stream(running.imap(run_python_task, std::move(payloads), 1));
    return Stream(running.imap_unordered(run_python_task, std::move(payloads), 1));
  }
  void close() {
    py::gil_scoped_release unlocked;
    pool().close();
  }
  void join() {
    auto& running = pool();
    py::gil_scoped_release unlocked;
    running.join();
  }
  void terminate() {
    if (!pool_) return;
    py::gil_scoped_release unlocked;
    pool_->terminate();
  }
  /// Ends the C++ pool now (terminate first to not wait for outstanding tasks).
  void release() {
    if (!pool_) return;
    py::gil_scoped_release unlocked;
    pool_.reset();
  }

 private:
  std::optional<fiber::Pool> pool_;
};

}  // namespace

void bind_pool(py::module_& m) {
  py::class_<ApplyResult>(m, "ApplyResult")
      .def("get", &ApplyResult::get, py::arg("timeout") = py::none())
      .def("wait", &ApplyResult::wait, py::arg("timeout") = py::none())
      .def("ready", &ApplyResult::ready)
      .def("successful", &ApplyResult::successful)
      .def("when_done", &ApplyResult::when_done);
  py::class_<MapResult>(m, "MapResult")
      .def("get", &MapResult::get, py::arg("timeout") = py::none())
      .def("wait", &MapResult::wait, py::arg("timeout") = py::none())
      .def("ready", &MapResult::ready)
      .def("successful", &MapResult::successful)
      .def("when_done", &MapResult::when_done);
  py::class_<Stream>(m, "Stream").def("next", &Stream::next, py::arg("timeout") = py::none());
  py::class_<PoolHandle>(m, "Pool")
      .def(py::init<int, std::optional<std::string>, uint64_t, int,
                    std::optional<std::tuple<int, int, double>>, int, uint64_t, int>(),
           py::arg("processes"), py::arg("initializer"), py::arg("maxtasksperchild"),
           py::arg("max_task_retries"), py::arg("autoscale"), py::arg("cpus_per_worker"),
           py::arg("memory_per_worker"), py::arg("gpus_per_worker"))
      .def("size", &PoolHandle::size)
      .def("wait_ready", &PoolHandle::wait_ready)
      .def("resize", &PoolHandle::resize)
      .def("worker_pids", &PoolHandle::worker_pids)
      .def("apply_async", &PoolHandle::apply_async)
      .def("map_async", &PoolHandle::map_async)
      .def("imap", &PoolHandle::imap)
      .def("close", &PoolHandle::close)
      .def("join", &PoolHandle::join)
      .def("terminate", &PoolHandle::terminate)
      .def("release", &PoolHandle::release);
}

}  // namespace fibermpi::binding
