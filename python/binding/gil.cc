#include "gil.h"

#include <algorithm>
#include <cmath>

namespace fibermpi::binding {

std::optional<double> checked_timeout(std::optional<double> timeout) {
  if (!timeout) return std::nullopt;
  if (std::isnan(*timeout)) throw py::value_error("a timeout must be a number of seconds, not nan");
  // Beyond 10^9 s a deadline would overflow the clock (and wait not at all).
  if (*timeout > 1e9) return std::nullopt;
  return timeout;
}

bool wait_interruptibly(std::optional<double> timeout,
                        const std::function<bool(std::chrono::nanoseconds)>& ready_within) {
  timeout = checked_timeout(timeout);
  using Clock = std::chrono::steady_clock;
  // Long enough that a waiting thread costs nothing, short enough that Ctrl-C feels immediate.
  constexpr std::chrono::nanoseconds kSlice = std::chrono::milliseconds(50);
  const bool limited = timeout.has_value();
  const Clock::time_point deadline =
      limited ? Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                   std::chrono::duration<double>(std::max(*timeout, 0.0)))
              : Clock::time_point::max();
  for (;;) {
    std::chrono::nanoseconds slice = kSlice;
    if (limited) slice = std::clamp<std::chrono::nanoseconds>(deadline - Clock::now(), {}, kSlice);
    bool ready = false;
    {
      py::gil_scoped_release unlocked;
      ready = ready_within(slice);
    }
    if (ready) return true;
    if (PyErr_CheckSignals() != 0) throw py::error_already_set();
    if (limited && Clock::now() >= deadline) return false;
  }
}

HeldObject::~HeldObject() {
  if (!object_) return;
  if (!Py_IsInitialized() || _Py_IsFinalizing()) {
    object_.release();
    return;
  }
  py::gil_scoped_acquire locked;
  object_ = py::object();
}

}  // namespace fibermpi::binding
