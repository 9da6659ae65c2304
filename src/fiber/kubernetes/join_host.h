// What the joining of jobs and worker pods asks of the master that they join. Internal.
#pragma once

#include <memory>
#include <string>

namespace fiber::internal {

class FiberJobScaler;

class JoinHost {
 public:
  virtual ~JoinHost() = default;
  /// Opens (once) the rendezvous other jobs join through; returns its address.
  virtual std::string listen() = 0;
  /// A joining pod got its turn / its turn ended (see JoinAcceptor::begin_turn). Traffic stops
  /// for the turn, so workers are first given enough queued work to last through it, as for a
  /// spawn.
  virtual void begin_join_turn() = 0;
  virtual void end_join_turn() = 0;
  /// The launcher's connection with process `pid` of joined pod `pod` ("name/uid") closed
  /// (JoinTurns): that worker is gone. It is declared dead by the next periodic check after a
  /// short grace, which lets in what it sent last (a pod deleted gracefully says goodbye before
  /// it goes). Only that process: the pod's other ranks may live on (heartbeats watch them).
  virtual void pod_connection_closed(const std::string& pod, int pid) = 0;
  /// Runs as the launcher of a FiberJob: workers come from worker pods asked of `scaler`'s job
  /// (`slots_per_pod` workers each) instead of MPI_Comm_spawn. Call after listen().
  virtual void provision_pods(std::unique_ptr<FiberJobScaler> scaler, int slots_per_pod) = 0;
};

}  // namespace fiber::internal
