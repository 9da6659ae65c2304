// The master's stdout and stderr, shared with the processes it spawns on its own host, as a
// forked child shares its parent's. Open MPI 5 forwards a spawned child's output through its
// runtime, and in a program started without mpirun (a singleton) it loses the output of the
// children of every MPI_Comm_spawn after the first few (measured on 5.0.11: a Process's
// print()s vanish once a second batch was spawned; PMIx forwards output only to a spawner that
// is a tool, openpmix#4120). A spawned worker instead takes the master's own descriptors through
// a Unix socket, so its output lands where the master's does, in order with it, whatever the
// master's stdout is (a terminal, a pipe, a file). Free of MPI. Internal.
#pragma once

#include <string>
#include <thread>

namespace fiber::internal {

/// The environment variable that gives a spawned worker the master's socket.
inline constexpr const char kSharedOutputVariable[] = "FIBER_OUTPUT_SOCKET";

/// In the master: a socket in the abstract namespace (a random name, reachable only from this
/// host's network namespace) that hands the caller's current descriptors 1 and 2 to each
/// process of the same user that connects.
class SharedOutput {
 public:
  /// Opens the socket and starts serving it; throws std::system_error when it cannot.
  SharedOutput();
  ~SharedOutput();
  SharedOutput(const SharedOutput&) = delete;
  SharedOutput& operator=(const SharedOutput&) = delete;

  /// What kSharedOutputVariable carries to the children.
  const std::string& address() const { return address_; }

 private:
  void serve();

  std::string address_;
  int listener_ = -1;
  int stop_[2] = {-1, -1};
  std::thread server_;
};

/// In a spawned worker: takes the master's descriptors 1 and 2 from `address` in their place
/// (after flushing C's streams). False, with nothing changed, where the master cannot be reached
/// (a worker on another host) or refuses.
bool adopt_shared_output(const std::string& address);

}  // namespace fiber::internal
