// How the binding waits: with the GIL released (fibermpi's own threads never need it to make
// progress) and in slices, so that Ctrl-C reaches the waiting Python code as KeyboardInterrupt.
#pragma once

#include <pybind11/pybind11.h>

#include <chrono>
#include <functional>
#include <optional>

namespace fibermpi::binding {

namespace py = pybind11;

/// A timeout in seconds as the waits take it: one too long for a clock (an infinity, above 10^9
/// s, threading.TIMEOUT_MAX) is none; NaN is refused (ValueError).
std::optional<double> checked_timeout(std::optional<double> timeout);

/// Waits until `ready_within(slice)` says true, or `timeout` seconds pass (none: no limit).
/// Called with the GIL held; releases it while waiting and, between slices, runs Python's signal
/// handlers: one that raises (KeyboardInterrupt) ends the wait with that exception. False when
/// the timeout passed.
bool wait_interruptibly(std::optional<double> timeout,
                        const std::function<bool(std::chrono::nanoseconds)>& ready_within);

/// A Python object held by C++ code that may drop it on a thread of fibermpi's own, after the
/// interpreter has ended even: the reference is given back under the GIL, or leaked when Python
/// is gone.
class HeldObject {
 public:
  explicit HeldObject(py::object object) : object_(std::move(object)) {}
  HeldObject(const HeldObject&) = delete;
  HeldObject& operator=(const HeldObject&) = delete;
  ~HeldObject();
  const py::object& get() const { return object_; }

 private:
  py::object object_;
};

}  // namespace fibermpi::binding
