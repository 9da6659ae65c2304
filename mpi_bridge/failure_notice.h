// MPI's own notice that a peer process died, where the MPI has one: Open MPI 5's fault-tolerance
// extension (ULFM) fails operations on a communicator with a dead member with
// MPI_ERR_PROC_FAILED instead of leaving them waiting forever. fibermpi uses it as a faster path
// beside its own heartbeats and pid checks, never instead of them.
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

#include "mpi_bridge/error.h"

namespace fiber::bridge {

/// True when this build's MPI has the fault-tolerance extension (MPIX_Comm_get_failed...).
bool failure_notices_compiled();

/// True when `code` (an MPI return code) says a peer process failed.
bool is_peer_failure(int code);

/// Acknowledges every failure MPI knows of on `comm`, so that receives from any source work
/// again, and returns the ranks that failed: remote ranks for an intercommunicator, local ones
/// otherwise. Empty when the MPI has no failure notices.
std::vector<int> acknowledge_failed_peers(MPI_Comm comm);

/// Thrown by try_receive when MPI reports that peers of the communicator died; the failures are
/// already acknowledged.
class PeersFailed : public MpiError {
 public:
  PeersFailed(const std::string& routine, int code, std::vector<int> ranks)
      : MpiError(mpi_error(routine, code)), ranks_(std::move(ranks)) {}
  /// Ranks (in the communicator's remote group for an intercommunicator) that failed.
  const std::vector<int>& ranks() const noexcept { return ranks_; }

 private:
  std::vector<int> ranks_;
};

}  // namespace fiber::bridge
