// fibermpi._core.QueueRef: a queue of the master's hub (the one behind fiber::SimpleQueue,
// fiber::Queue and fiber::Pipe's channels), holding pickled items. fibermpi/queues.py and
// fibermpi/connection.py give it multiprocessing's API. Every wait is interruptible.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bindings.h"
#include "fiber/errors.h"
#include "fiber/queue_ref.h"
#include "gil.h"

namespace fibermpi::binding {
namespace {

using fiber::detail::QueueRef;
using Clock = std::chrono::steady_clock;
constexpr std::chrono::microseconds kNow{0};

std::vector<std::byte> to_item(const py::bytes& item) {
  const std::string_view view = item;
  const auto* begin = reinterpret_cast<const std::byte*>(view.data());
  return {begin, begin + view.size()};
}

py::bytes to_python(const std::vector<std::byte>& item) {
  return py::bytes(reinterpret_cast<const char*>(item.data()), item.size());
}

// Seconds left until `deadline` (none: no limit), at least 0.
std::optional<double> left_until(const std::optional<Clock::time_point>& deadline) {
  if (!deadline) return std::nullopt;
  return std::max(0.0, std::chrono::duration<double>(*deadline - Clock::now()).count());
}

std::optional<Clock::time_point> deadline_after(std::optional<double> timeout) {
  timeout = checked_timeout(timeout);
  if (!timeout) return std::nullopt;
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(
                            std::chrono::duration<double>(std::max(*timeout, 0.0)));
}

class Queue {
 public:
  explicit Queue(uint64_t id) : ref_(id) {}
  static Queue create(bool pipe_channel, bool joinable, uint64_t maxsize) {
    py::gil_scoped_release unlocked;
    return Queue(QueueRef::create(pipe_channel, joinable, maxsize).id());
  }

  uint64_t id() const { return ref_.id(); }

  void put(const py::bytes& item) {
    auto bytes = to_item(item);
    py::gil_scoped_release unlocked;
    ref_.put(std::move(bytes));
  }
  /// Puts into a bounded queue, waiting for room (at most `timeout` s: fiber::Full after).
  void put_waiting(const py::bytes& item, std::optional<double> timeout, const std::string& what) {
    const auto bytes = to_item(item);
    const auto deadline = deadline_after(timeout);
    constexpr std::chrono::microseconds kSlice = std::chrono::milliseconds(50);
    for (;;) {
      auto limit = kSlice;
      if (deadline) {
        limit = std::clamp(
            std::chrono::duration_cast<std::chrono::microseconds>(*deadline - Clock::now()), kNow,
            kSlice);
      }
      try {
        py::gil_scoped_release unlocked;
        ref_.put_waiting(bytes, limit, what.c_str());
        return;
      } catch (const fiber::Full&) {
        if (deadline && Clock::now() >= *deadline) throw;
      }
      if (PyErr_CheckSignals() != 0) throw py::error_already_set();
    }
  }
  /// Takes the next item, waiting at most `timeout` s (fiber::Empty after); fiber::EOFError when
  /// no live process can put any more.
  py::bytes get(std::optional<double> timeout, const std::string& what) {
    const auto deadline = deadline_after(timeout);
    for (;;) {
      const bool ready =
          wait_interruptibly(left_until(deadline), [this](std::chrono::nanoseconds slice) {
            return ref_.poll(std::chrono::duration_cast<std::chrono::microseconds>(slice));
          });
      if (!ready) throw fiber::Empty(what + ": nothing arrived within the timeout");
      std::vector<std::byte> item;
      try {
        py::gil_scoped_release unlocked;
        item = ref_.get(kNow, what.c_str());
      } catch (const fiber::Empty&) {
        // Another process took it first.
        if (deadline && Clock::now() >= *deadline) throw;
        continue;
      }
      return to_python(item);
    }
  }
  bool poll(std::optional<double> timeout) {
    if (timeout && *timeout <= 0) {
      py::gil_scoped_release unlocked;
      return ref_.poll(kNow);
    }
    return wait_interruptibly(timeout, [this](std::chrono::nanoseconds slice) {
      return ref_.poll(std::chrono::duration_cast<std::chrono::microseconds>(slice));
    });
  }
  size_t size() {
    py::gil_scoped_release unlocked;
    return ref_.size();
  }
  void task_done() {
    py::gil_scoped_release unlocked;
    ref_.task_done();
  }
  /// True once every item put was task_done (within `timeout` s).
  bool join(std::optional<double> timeout) {
    return wait_interruptibly(timeout, [this](std::chrono::nanoseconds slice) {
      return ref_.join(std::chrono::duration_cast<std::chrono::microseconds>(slice));
    });
  }
  void close_producer() {
    py::gil_scoped_release unlocked;
    ref_.close_producer();
  }

 private:
  QueueRef ref_;
};

}  // namespace

void bind_queue(py::module_& m) {
  py::class_<Queue>(m, "QueueRef")
      .def(py::init<uint64_t>(), py::arg("id"))
      .def_static("create", &Queue::create, py::arg("pipe_channel"), py::arg("joinable"),
                  py::arg("maxsize"))
      .def_property_readonly("id", &Queue::id)
      .def("put", &Queue::put)
      .def("put_waiting", &Queue::put_waiting, py::arg("item"), py::arg("timeout"), py::arg("what"))
      .def("get", &Queue::get, py::arg("timeout"), py::arg("what"))
      .def("poll", &Queue::poll, py::arg("timeout"))
      .def("size", &Queue::size)
      .def("task_done", &Queue::task_done)
      .def("join", &Queue::join, py::arg("timeout"))
      .def("close_producer", &Queue::close_producer);
}

}  // namespace fibermpi::binding
