// The rendezvous independently started jobs join through (fiber::listen): a port, and a thread
// blocked in MPI_Comm_accept that hands each joining job to the progress engine as a link.
// Internal.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "fiber/engine/progress_engine.h"
#include "mpi_bridge/rendezvous.h"

namespace fiber::internal {

class JoinAcceptor {
 public:
  explicit JoinAcceptor(ProgressEngine& engine) : engine_(engine) {}
  JoinAcceptor(const JoinAcceptor&) = delete;
  JoinAcceptor& operator=(const JoinAcceptor&) = delete;

  /// Opens the rendezvous (once) and returns its address.
  std::string open();
  /// Stops taking jobs. MPI_Comm_accept cannot be cancelled (and connecting to the process's own
  /// port to end it deadlocks in Open MPI 4.1): a thread blocked in it stays blocked until the
  /// process exits. Returns true only when the thread has ended (or never ran): otherwise it may
  /// still call MPI, so MPI must not be finalised.
  bool stop();

  /// A joining job has been given its turn (JoinTurns) and is about to connect: the process's
  /// other MPI traffic stops until its accept has returned, or until end_turn(). Open MPI 4.1
  /// deadlocks when another thread drives MPI during an accept (the progress thread, taking a
  /// new peer's first bytes, waits in PMIx holding the TCP transport's lock that the accept
  /// needs to add that peer).
  void begin_turn();
  /// The turn ended (its job connected, left or timed out): traffic flows again.
  void end_turn();

 private:
  void loop();

  ProgressEngine& engine_;
  std::unique_ptr<bridge::Rendezvous> rendezvous_;
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> exited_{false};  ///< The thread has returned: it makes no MPI call any more.
  std::atomic<bool> turn_holds_{false};  ///< Traffic is held for a joining job's turn.
};

}  // namespace fiber::internal
