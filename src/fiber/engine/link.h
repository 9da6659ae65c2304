// A communicator to a group of workers, as the process that polls it sees it. Internal.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "mpi_bridge/communicator.h"

namespace fiber::internal {

using Clock = std::chrono::steady_clock;

/// The static world, one MPI_Comm_spawn call's children, or a job that joined through the
/// rendezvous (in a worker: its one link to the master).
struct Link {
  bridge::Communicator comm;
  bool spawned = false;
  bool connected = false;   ///< A job that joined through the rendezvous.
  int live_slots = 0;       ///< Workers on it that may still send.
  int expected_hellos = 0;  ///< Workers started on it; each must say hello within hello_timeout.
  int hellos = 0;
  Clock::time_point created;
  Clock::time_point last_heard;  ///< Last message on it (any rank).
  std::string executable;        ///< What a spawned link's workers run.
  /// Polled rank by rank: once a process of a spawned or joined job has ended, Open MPI 5 fails
  /// every receive from any source on its communicator, for good (the failure acknowledged and
  /// none left to acknowledge), while receives from each live rank still work.
  bool by_rank = false;
  std::vector<bool> failed_ranks;  ///< With by_rank: ranks MPI reported dead, no longer polled.
  int next_rank = 0;               ///< With by_rank: where the next pass starts.
};

}  // namespace fiber::internal
