// The life of a worker process. Internal.
#pragma once

namespace fiber::internal {

class Runtime;

/// Handshake, then run what the master assigns until told to stop; never returns.
[[noreturn]] void run_worker(Runtime& runtime);

}  // namespace fiber::internal
