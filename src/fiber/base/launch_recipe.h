// What launching a fibermpi program takes on each MPI it can be built against, as data: the
// options its mpirun needs, the variables its runtime needs, the root opt-in. Free of MPI, so
// that a tool launching a program built against another MPI than its own (`fibermpi run`)
// follows the same recipe as the runtime itself (mpi_bridge/launch_environment.h, which applies
// it for the MPI this library was built against). Internal.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace fiber::internal {

/// The MPI implementations fibermpi knows, by the launch behaviour that sets them apart.
enum class MpiFamily {
  kOpenMpi4,  ///< Open MPI 4.x: mpirun is orterun, recovery is --enable-recovery.
  kOpenMpi5,  ///< Open MPI 5.x: mpirun is a PRRTE launcher, fault tolerance is ULFM.
  kMpich,     ///< MPICH (hydra's mpiexec): the static world and spawn; no joining jobs, no
              ///< recovery from a killed process.
};

/// "Open MPI 4", "Open MPI 5", "MPICH".
std::string_view family_name(MpiFamily family);

/// The family of the library whose MPI_Get_library_version text is `version_text` ("Open MPI
/// v5.0.11, package: ...", "MPICH Version: 5.0.2 ..."); false when it is none of them.
bool family_from_library_version(std::string_view version_text, MpiFamily& family);

/// The variable a launcher sets when recovery is on (OMPI_MCA_orte_enable_recovery for 4,
/// OMPI_MCA_mpi_ft_enable for 5); empty for MPICH.
std::string recovery_variable(MpiFamily family);

/// The recovery options of that family's mpirun as one line, for messages; empty for MPICH,
/// which has none that fibermpi can use.
std::string recovery_option(MpiFamily family);

/// The variables a launcher-less process of `family` sets before MPI starts its own runtime:
/// recovery (a spawned child's death must not end the program), Open MPI 5's recoverable jobs
/// and PMIx sensors off, and the root opt-in when `as_root`.
std::vector<std::pair<std::string, std::string>> own_runtime_variables(MpiFamily family,
                                                                       bool as_root);

/// The variables every process of `family` needs before MPI_Init, each unless the user set it:
/// MPICH's ofi netmod over TCP (with its default, UCX, MPI_Open_port fails with "no space for
/// port_name tag", and Groups and joining jobs need ports).
std::vector<std::pair<std::string, std::string>> process_variables(MpiFamily family);

/// The variables an mpirun of `family` and the processes it starts need (Open MPI 5: the PMIx
/// process sensors off, see launch_recipe.cc).
std::vector<std::pair<std::string, std::string>> mpirun_variables(MpiFamily family);

/// mpirun's options for a fibermpi job of `family`: recovery, oversubscription, and
/// --allow-run-as-root when `as_root` (none for MPICH's mpiexec).
std::vector<std::string> mpirun_options(MpiFamily family, bool as_root);

/// The root opt-in variables that family's runtime reads (OMPI_ALLOW_RUN_AS_ROOT and its
/// _CONFIRM for 4.1's orted and 5's mpirun, PRTE_ALLOW_RUN_AS_ROOT and its _CONFIRM for 5's
/// prte); none for MPICH.
std::vector<std::string> root_variables(MpiFamily family);

}  // namespace fiber::internal
