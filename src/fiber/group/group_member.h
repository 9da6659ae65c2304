// What a member of a fiber::Group runs in its worker: it waits for the master's plan, builds the
// group's communicator with the other members (an island per MPI world, islands joined by
// connect/accept), runs the user's function with the membership visible to it
// (fiber::group_rank(), group_comm()...), and ends the communicator together with the others.
// Internal.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

namespace fiber::internal {

/// The group this process is a member of, while the member's function runs.
struct GroupMembership {
  uint64_t group = 0;
  int rank = 0;
  int size = 0;
  int restarts = 0;
  MPI_Comm comm = MPI_COMM_NULL;
};

/// The membership of the function running in this process, or null outside a group member.
const GroupMembership* current_group_membership();

/// A member's process: `task` is the user's function and arguments, encoded (save_task).
void group_member_main(uint64_t group, uint32_t attempt, std::vector<std::byte> task);

}  // namespace fiber::internal
