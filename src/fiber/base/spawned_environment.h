// The environment a spawner gives its children, carried on their command line for an MPI whose
// MPI_Comm_spawn cannot set it: MPICH's hydra ignores the "env" info key, and its children
// inherit only the environment mpiexec started with. The child takes the entries off its
// command line before anything reads its environment. Free of MPI. Internal.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace fiber::internal {

/// The word that comes before each NAME=VALUE entry on a spawned child's command line.
inline constexpr const char kEnvironmentArgument[] = "--fibermpi-env";

/// The command-line words carrying `environment`: kEnvironmentArgument, "NAME=VALUE" for each.
std::vector<std::string> environment_as_arguments(
    const std::vector<std::pair<std::string, std::string>>& environment);

/// Sets (overwriting) every variable that argv[1...] carries as leading kEnvironmentArgument
/// pairs, and removes those words from argc/argv, so that the program sees its own arguments
/// only. An entry without '=' or with an empty name is left in place, untouched.
void take_environment_arguments(int& argc, char**& argv);

}  // namespace fiber::internal
