// The C++ functions every Python task runs through. Code travels by reference (fibermpi's
// FunctionRef: the extension's build id and an offset), so each of these resolves in any worker
// that imported the same extension; the Python callable and its arguments travel as pickled
// bytes, which the worker's fibermpi._task turns back into a call.
#pragma once

#include <string>

namespace fibermpi::binding {

/// A pool task: one chunk of a map, or an apply. Returns the pickled outcome (values, or the
/// exception the Python code raised: that is a result, not a failure of the task).
std::string run_python_task(std::string payload);

/// A pool's initializer.
void run_python_initializer(std::string payload);

/// A Process's target (or its run()); ends the process with the target's exit code.
void run_python_process(std::string payload);

}  // namespace fibermpi::binding
