// A communicator to a group of workers, as the process that polls it sees it. Internal.
#pragma once

#include <chrono>
#include <string>

#include "mpi_bridge/communicator.h"

namespace fiber::detail {

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
};

}  // namespace fiber::detail
