// Starting new processes with MPI_Comm_spawn.
#pragma once

#include <string>

#include "fiber/spawn_options.h"
#include "mpi_bridge/communicator.h"

namespace fiber::bridge {

/// Checks that `path` can be spawned as a fibermpi worker: an existing executable file that
/// carries the fibermpi marker. Throws fiber::SpawnError saying what is wrong, because Open MPI's
/// spawn of a missing or non-MPI program hangs instead of failing.
void check_spawnable(const std::string& path);

/// Spawns `count` copies and returns the intercommunicator to them (local group: this process).
/// Throws fiber::SpawnError with MPI's reason on failure.
Communicator spawn(const SpawnOptions& options, int count);

}  // namespace fiber::bridge
