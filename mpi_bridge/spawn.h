// Starting new processes with MPI_Comm_spawn.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "mpi_bridge/communicator.h"

namespace fiber::bridge {

/// Where and how spawned processes start. Empty fields leave the choice to MPI.
struct SpawnOptions {
  std::string executable;                                ///< Absolute path; empty = this program.
  std::vector<std::string> args;                         ///< argv[1..] of the children.
  std::string host;                                      ///< "host" info key (a host name or list).
  std::string wdir;                                      ///< Working directory of the children.
  std::vector<std::pair<std::string, std::string>> env;  ///< Extra environment variables.
  bool oversubscribe = true;  ///< Allow more processes than cores (spawned jobs do not inherit it).
};

/// Checks that `path` can be spawned as a fibermpi worker: an existing executable file that
/// carries the fibermpi marker. Throws fiber::SpawnError saying what is wrong, because Open MPI's
/// spawn of a missing or non-MPI program hangs instead of failing.
void check_spawnable(const std::string& path);

/// Spawns `count` copies and returns the intercommunicator to them (local group: this process).
/// Throws fiber::SpawnError with MPI's reason on failure.
Communicator spawn(const SpawnOptions& options, int count);

}  // namespace fiber::bridge
