// fibermpi._core.ObjectRef: an object of the master's manager (the one behind fiber::Manager):
// the locks, semaphores, events, conditions and barriers of fibermpi/synchronize.py, and the
// stores of fibermpi/managers.py, Python objects the master keeps and serves on a thread of
// their own (so a worker's call never waits for the engine's progress thread to take the GIL).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "bindings.h"
#include "fiber/detail/object_ref.h"
#include "fiber/manager.h"
#include "gil.h"

namespace fibermpi::binding {
namespace {

using fiber::detail::ObjectAnswer;
using fiber::detail::ObjectOp;
using fiber::detail::ObjectType;
using Clock = std::chrono::steady_clock;

std::vector<std::byte> to_bytes(std::string_view view) {
  const auto* begin = reinterpret_cast<const std::byte*>(view.data());
  return {begin, begin + view.size()};
}

// What an operation answered, as Python sees it: None for a timeout, an int for a number, bytes
// for an item.
py::object to_python(const ObjectAnswer& answer) {
  if (answer.timed_out) return py::none();
  if (answer.is_number) return py::int_(answer.number);
  return py::bytes(reinterpret_cast<const char*>(answer.bytes.data()), answer.bytes.size());
}

// The text of the Python exception being handled, for a C++ exception the manager reports.
std::string describe(const py::error_already_set& error) { return std::string(error.what()); }

// A store of fibermpi.managers, made in the master by the object's own thread.
void* make_store(fiber::serial::Reader& /*args*/) {
  py::gil_scoped_acquire locked;
  try {
    py::object store = py::module_::import("fibermpi.managers").attr("_Store")();
    return store.release().ptr();
  } catch (const py::error_already_set& e) {
    throw std::runtime_error("fibermpi.managers._Store() failed: " + describe(e));
  }
}

void destroy_store(void* object) {
  // At the program's end the interpreter may be gone: the reference is then left as it is.
  if (!Py_IsInitialized() || _Py_IsFinalizing()) return;
  py::gil_scoped_acquire locked;
  Py_DECREF(static_cast<PyObject*>(object));
}

// One request to a store: bytes in, bytes out. The store answers a failing call with the
// exception, pickled: only a failure of the store itself reaches here as an exception.
void serve_store(void* object, fiber::serial::Reader& args, fiber::serial::Writer& result) {
  const auto request = args.read_span(args.remaining());
  py::gil_scoped_acquire locked;
  try {
    py::handle store(static_cast<PyObject*>(object));
    py::bytes answer = store.attr("_serve")(
        py::bytes(reinterpret_cast<const char*>(request.data()), request.size()));
    const std::string_view view = answer;
    result.write_bytes(reinterpret_cast<const std::byte*>(view.data()), view.size());
  } catch (const py::error_already_set& e) {
    throw std::runtime_error("a Manager's store failed: " + describe(e));
  }
}

class ObjectRef {
 public:
  explicit ObjectRef(uint64_t id) : ref_(id) {}

  /// A lock, semaphore, event, condition or barrier of the hub (`type`, fiber's ObjectType).
  static ObjectRef create(uint32_t type, const py::bytes& payload) {
    if (type == static_cast<uint32_t>(ObjectType::kHosted))
      throw std::invalid_argument("ObjectRef.create makes no hosted object: use create_store");
    auto bytes = to_bytes(payload);
    py::gil_scoped_release unlocked;
    return ObjectRef(
        fiber::detail::ObjectRef::create(static_cast<ObjectType>(type), std::move(bytes)).id());
  }

  /// A new store of fibermpi.managers, kept in the master.
  static ObjectRef create_store() {
    fiber::serial::Writer payload;
    fiber::detail::save_ref(payload, fiber::detail::code_ref<&make_store>());
    fiber::detail::save_ref(payload, fiber::detail::code_ref<&destroy_store>());
    py::gil_scoped_release unlocked;
    return ObjectRef(fiber::detail::ObjectRef::create(ObjectType::kHosted, payload.take()).id());
  }

  uint64_t id() const { return ref_.id(); }

  /// One operation that does not wait (or waits at most `timeout` s, not interruptibly).
  py::object call(uint32_t op, const py::bytes& args, const std::string& what,
                  std::optional<double> timeout) const {
    auto bytes = to_bytes(args);
    ObjectAnswer answer;
    {
      py::gil_scoped_release unlocked;
      answer =
          ref_.call(static_cast<ObjectOp>(op), std::move(bytes), what.c_str(), micros(timeout));
    }
    return to_python(answer);
  }

  /// An operation that waits (at most `timeout` s; None: no limit), in slices with Python's
  /// signal handlers run between them: Ctrl-C ends it as KeyboardInterrupt. Each slice sends
  /// `slice_args`, which tell the master the wait goes on (a barrier party withdraws rather
  /// than break it; a condition's ticket stays); the last, once the timeout has passed, sends
  /// `args` with no wait. None when it timed out.
  py::object wait(uint32_t op, const py::bytes& args, const py::bytes& slice_args,
                  const std::string& what, std::optional<double> timeout) const {
    constexpr std::chrono::microseconds kSlice = std::chrono::milliseconds(50);
    const auto whole = to_bytes(args);
    const auto sliced = to_bytes(slice_args);
    timeout = checked_timeout(timeout);
    std::optional<Clock::time_point> deadline;
    if (timeout) {
      deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                    std::chrono::duration<double>(std::max(*timeout, 0.0)));
    }
    for (;;) {
      const bool last = deadline && Clock::now() >= *deadline;
      auto limit = kSlice;
      if (deadline && !last) {
        limit = std::clamp(
            std::chrono::duration_cast<std::chrono::microseconds>(*deadline - Clock::now()),
            std::chrono::microseconds(0), kSlice);
      }
      ObjectAnswer answer;
      {
        py::gil_scoped_release unlocked;
        answer = last ? ref_.call(static_cast<ObjectOp>(op), whole, what.c_str(),
                                  std::chrono::microseconds(0))
                      : ref_.call(static_cast<ObjectOp>(op), sliced, what.c_str(), limit);
      }
      if (!answer.timed_out || last) return to_python(answer);
      if (PyErr_CheckSignals() != 0) throw py::error_already_set();
    }
  }

  /// A request to a store (fibermpi.managers); its answer.
  py::bytes serve(const py::bytes& request) const {
    fiber::serial::Writer payload;
    fiber::detail::save_ref(payload, fiber::detail::code_ref<&serve_store>());
    const std::string_view view = request;
    payload.write_bytes(reinterpret_cast<const std::byte*>(view.data()), view.size());
    ObjectAnswer answer;
    {
      py::gil_scoped_release unlocked;
      answer = ref_.call(ObjectOp::kHostedCall, payload.take(), "Manager");
    }
    return py::bytes(reinterpret_cast<const char*>(answer.bytes.data()), answer.bytes.size());
  }

 private:
  static std::optional<std::chrono::microseconds> micros(std::optional<double> timeout) {
    timeout = checked_timeout(timeout);
    if (!timeout) return std::nullopt;
    return std::chrono::duration_cast<std::chrono::microseconds>(
        std::chrono::duration<double>(std::max(*timeout, 0.0)));
  }

  fiber::detail::ObjectRef ref_;
};

}  // namespace

void bind_manager(py::module_& m) {
  py::class_<ObjectRef>(m, "ObjectRef")
      .def(py::init<uint64_t>(), py::arg("id"))
      .def_static("create", &ObjectRef::create, py::arg("type"), py::arg("payload"))
      .def_static("create_store", &ObjectRef::create_store)
      .def_property_readonly("id", &ObjectRef::id)
      .def("call", &ObjectRef::call, py::arg("op"), py::arg("args"), py::arg("what"),
           py::arg("timeout") = py::none())
      .def("wait", &ObjectRef::wait, py::arg("op"), py::arg("args"), py::arg("slice_args"),
           py::arg("what"), py::arg("timeout"))
      .def("serve", &ObjectRef::serve, py::arg("request"));
  // fiber's ObjectType and ObjectOp values the Python side uses.
  py::dict types;
  types["lock"] = static_cast<uint32_t>(ObjectType::kLock);
  types["event"] = static_cast<uint32_t>(ObjectType::kEvent);
  types["barrier"] = static_cast<uint32_t>(ObjectType::kBarrier);
  types["semaphore"] = static_cast<uint32_t>(ObjectType::kSemaphore);
  types["condition"] = static_cast<uint32_t>(ObjectType::kCondition);
  m.attr("OBJECT_TYPES") = types;
  py::dict ops;
  const std::pair<const char*, ObjectOp> named[] = {
      {"lock_acquire", ObjectOp::kLockAcquire},
      {"lock_release", ObjectOp::kLockRelease},
      {"lock_held", ObjectOp::kLockHeld},
      {"event_set", ObjectOp::kEventSet},
      {"event_clear", ObjectOp::kEventClear},
      {"event_is_set", ObjectOp::kEventIsSet},
      {"event_wait", ObjectOp::kEventWait},
      {"event_state", ObjectOp::kEventState},
      {"barrier_wait", ObjectOp::kBarrierWait},
      {"barrier_reset", ObjectOp::kBarrierReset},
      {"barrier_abort", ObjectOp::kBarrierAbort},
      {"barrier_waiting", ObjectOp::kBarrierWaiting},
      {"barrier_broken", ObjectOp::kBarrierBroken},
      {"semaphore_acquire", ObjectOp::kSemaphoreAcquire},
      {"semaphore_release", ObjectOp::kSemaphoreRelease},
      {"semaphore_value", ObjectOp::kSemaphoreValue},
      {"condition_enqueue", ObjectOp::kConditionEnqueue},
      {"condition_wait", ObjectOp::kConditionWait},
      {"condition_notify", ObjectOp::kConditionNotify},
      {"condition_waiting", ObjectOp::kConditionWaiting},
  };
  for (const auto& [name, op] : named) ops[name] = static_cast<uint32_t>(op);
  m.attr("OBJECT_OPS") = ops;
}

}  // namespace fibermpi::binding
