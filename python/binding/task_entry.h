// The C++ functions every Python task runs through. Code travels by reference (fibermpi's
// FunctionRef: the extension's build id and an offset), so each of these resolves in any worker
// that imported the same extension; the Python callable and its arguments travel as pickled
// bytes, which the worker's fibermpi._task turns back into a call.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fiber/invoke.h"
#include "fiber/serialization.h"

namespace fibermpi::binding {

/// A pool task: one chunk of a map, or an apply. Returns the pickled outcome (values, or the
/// exception the Python code raised: that is a result, not a failure of the task).
std::string run_python_task(std::string payload);

/// A pool's initializer.
void run_python_initializer(std::string payload);

/// A Process's (or a group's) pickled object, and the queues it can put into (the handles pickled
/// inside it): the master counts the process among their producers, so that a get() which no live
/// process can serve ends with EOFError instead of waiting forever. Only the bytes travel.
struct ProcessPayload {
  std::string bytes;
  std::vector<uint64_t> produces;

  void fiber_save(fiber::serial::Writer& writer) const {
    for (const uint64_t queue : produces) fiber::detail::HandleCollector::note_producer(queue);
    fiber::serial::save(writer, bytes);
  }
  static ProcessPayload fiber_load(fiber::serial::Reader& reader) {
    return ProcessPayload{fiber::serial::read<std::string>(reader), {}};
  }
};

/// A Process's target (or its run()); ends the process with the target's exit code.
void run_python_process(ProcessPayload payload);

/// A fibermpi.Group member's target; ends the process with the target's exit code, as
/// run_python_process. The member's group is fiber::group_comm()'s.
void run_python_group_member(ProcessPayload payload);

}  // namespace fibermpi::binding
