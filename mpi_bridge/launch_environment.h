// How this MPI is launched (whether a launcher started this process is internal::LaunchSite's
// answer, fiber/base/launch_site.h): what a
// process that starts Open MPI's runtime itself puts into its environment first (recovery, the
// root opt-in, the relocated installation), and the options an mpirun of this MPI needs. Used
// by the runtime's start (a launcher-less program's runtime: Open MPI 5's prte, 4.1's orted,
// started at the first spawn), by the Kubernetes mode's mpirun, and by tools that launch
// programs.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "fiber/base/launch_recipe.h"
#include "fiber/base/launch_site.h"

namespace fiber::bridge {

/// The MPI this library was built against.
internal::MpiFamily built_against_mpi();

/// The launcher command (before the program and its arguments) that a program started without a
/// launcher runs itself under, or empty where it needs none. MPICH: its own mpiexec -n 1. A
/// launcher-less MPICH process is its process manager's child in the caller's process group,
/// which hydra signals whole (SIGKILL) when a process of the job ends without finalising, as a
/// killed worker does: the user's shell and pipeline with it. Under mpiexec every process has a
/// session of its own.
std::vector<std::string> own_launcher_command();

/// This process runs as root (effective uid 0), as in most containers and CI machines.
bool running_as_root();

/// The variables a launcher-less process sets before MPI starts its runtime: the recovery that
/// keeps the program alive when a spawned child dies and, when running as root, the opt-in
/// Open MPI's runtime refuses to start without (OMPI_ALLOW_RUN_AS_ROOT and
/// OMPI_ALLOW_RUN_AS_ROOT_CONFIRM for 4.1's orted, PRTE_ALLOW_RUN_AS_ROOT and
/// PRTE_ALLOW_RUN_AS_ROOT_CONFIRM for 5's prte): the user who runs `./prog` as root has
/// chosen to, and has no mpirun command line to say so on.
std::vector<std::pair<std::string, std::string>> own_runtime_variables();

/// Sets own_runtime_variables(), each unless the user set it already, points a relocated
/// Open MPI 5 at its installation (OPAL_PREFIX, prte on PATH), and gives Open MPI a writable
/// place for its session directory (use_writable_temporary_directory()).
void prepare_own_runtime();

/// What a process needs in its environment before MPI's runtime starts: prepare_own_runtime()
/// for a process no launcher started, and the MPI's process_variables(). Environment::initialize
/// calls it; a front end calls it earlier where another library may initialise MPI first.
void prepare_process_environment();

/// The directory temporary files go to: $TMPDIR when set, else /tmp when it is writable, else
/// /dev/shm when that is (a container whose root filesystem is read-only and has no volume on
/// /tmp still has its /dev/shm), else /tmp.
std::string temporary_directory();

/// Open MPI puts its session directory under $TMPDIR, else /tmp, and fails with no word on why
/// when that cannot be written. Where TMPDIR is unset and /tmp is not writable, sets TMPDIR to
/// temporary_directory(); where no such place exists, says so in one line on stderr, naming
/// the fix. Called before Open MPI's runtime starts (prepare_own_runtime(), the Kubernetes
/// mode's mpirun).
void use_writable_temporary_directory();

/// The mpirun options that keep a job alive when one of its processes is killed: Open MPI
/// 4.1's "--enable-recovery", Open MPI 5's "--with-ft ulfm --prtemca state_base_recoverable 1"
/// (the second part keeps the other workers of a spawn batch alive when one of them dies).
const char* recovery_option();

/// The variable a launcher sets when recovery is on (checked to warn when it is not); empty
/// for MPICH, which has no recovery fibermpi can use.
const char* recovery_variable();

/// mpirun's options for a fibermpi job of this MPI: recovery, oversubscription, and
/// --allow-run-as-root when running as root.
std::vector<std::string> mpirun_options();

/// True when MPI_Finalize waits for every other live process of the caller's MPI job: Open MPI 5
/// with its fault tolerance on runs an agreement over them there (a spawned worker that leaves
/// while its siblings serve on would wait until they all leave).
bool finalize_waits_for_the_job();

/// One line saying why Open MPI refused to start its runtime and how to fix it, when this
/// process runs as root without the full opt-in and no launcher started it (a launcher's runtime
/// runs already); empty otherwise.
std::string root_refusal_hint();

}  // namespace fiber::bridge
