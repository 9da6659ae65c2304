// Where a process runs, as its environment tells: on its own (a laptop, a login node), under an
// MPI launcher, inside a Slurm allocation, or in a pod of a FiberJob. The one answer the runtime,
// the MPI bridge, the exit-status report, pools and the fibermpi command all read.
#pragma once

#include <optional>
#include <string>

#include "fiber/base/config_file.h"

namespace fiber::internal {

/// Started by an MPI launcher (mpirun, srun, hydra): the rank variables of Open MPI, PMIx or PMI
/// are set.
bool started_by_launcher(const EnvironmentLookup& environment = process_environment());
/// This process's rank in the launcher's world; nothing when no launcher started it (or its rank
/// variable is not a number).
std::optional<int> launcher_rank(const EnvironmentLookup& environment = process_environment());
/// The identity of the FiberJob pod this process runs in, as the launcher knows its workers'
/// (their hello's `pod`): "NAME/UID" from FIBER_K8S_POD_NAME and FIBER_K8S_POD_UID (the uid tells
/// a replacement of the same name apart), "NAME" without a uid; empty outside a FiberJob.
std::string fiberjob_pod_identity(const EnvironmentLookup& environment = process_environment());
/// The size of the world the launcher started (OMPI_COMM_WORLD_SIZE, PMI_SIZE, or srun's step
/// size for a PMIx rank); 0 when unknown.
int launcher_world_size(const EnvironmentLookup& environment = process_environment());

struct LaunchSite {
  /// What the place is, one answer in this order: a FiberJob's pod (its launcher pod's program
  /// runs under mpirun too), a launcher's rank, a Slurm allocation, none.
  enum class Kind { kNone, kLauncher, kSlurmAllocation, kFiberJobPod };
  Kind kind = Kind::kNone;
  /// Set whatever the kind: started_by_launcher, launcher_rank and launcher_world_size.
  bool under_launcher = false;
  std::optional<int> rank;
  int world_size = 0;
  /// Slurm, whatever the kind (srun's ranks are in an allocation too): the job id, its task count
  /// (SLURM_NTASKS, else SLURM_NPROCS; 0 when the allocation names none) and its nodes.
  std::string slurm_job;
  int slurm_tasks = 0;
  std::string slurm_nodes;
  /// The allocation is one node, and it is this host (SLURM_JOB_NUM_NODES=1, the node list
  /// names this host or localhost): every rank runs here.
  bool slurm_only_this_node = false;
  /// The CPUs the allocation has on this node: SLURM_CPUS_ON_NODE (batch scripts, steps), else
  /// SLURM_JOB_CPUS_PER_NODE's count when the allocation is only this node; 0 when unknown.
  int slurm_cpus_on_node = 0;
  /// What may put ranks on hosts other than this one, in words ("Slurm allocation 12 of 3
  /// nodes", "the hostfile /h of OMPI_MCA_orte_default_hostfile, which names node-b"); empty when
  /// every rank runs here. Read from Slurm's node count, the hostfile and host-list variables of
  /// Open MPI 4.1 and 5 and of MPICH's hydra, and PBS's, Grid Engine's and LSF's host lists (a
  /// hostfile that cannot be read may name any host). MCA parameter files are not read.
  std::string other_hosts;
  /// A FiberJob pod: "launcher" or "worker", and the job's name.
  std::string pod_role;
  std::string fiberjob;

  /// One line: "none (no launcher, no allocation)", "Slurm allocation 12 (4 tasks on localhost)".
  std::string describe() const;
  /// "none", "launcher", "slurm", "fiberjob": for --json.
  std::string kind_name() const;
};

/// Reads the site from the environment. Throws fiber::UsageError for a Slurm task count that is
/// not a whole number.
LaunchSite detect_launch_site(const EnvironmentLookup& environment);

}  // namespace fiber::internal
