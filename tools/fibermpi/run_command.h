// `fibermpi run`: starts a program the right way for where it runs.
#pragma once

#include <string>
#include <vector>

namespace fibermpi {

struct RunRequest {
  int ranks = 0;                     ///< -n; 0 when not given.
  bool dry_run = false;              ///< Print what would run, run nothing.
  bool srun = false;                 ///< Inside an allocation: srun --mpi=pmix, not mpirun.
  std::vector<std::string> command;  ///< PROGRAM ARGS...
};

/// Runs the request and returns the program's own exit status (or, with dry_run, prints the
/// command and returns 0). Throws fiber::UsageError for a request that cannot run here.
/// - No launcher, no allocation, no -n: the program itself, which starts its own runtime and
///   spawns its workers.
/// - -n N, or inside a Slurm allocation (-n defaults to its task count): the mpirun of the MPI
///   the program is linked against, with that MPI's recovery, oversubscription (outside Slurm)
///   and root options, as one job of N ranks.
/// - With srun (inside an allocation only): `srun --mpi=pmix -n N`, the ranks started by Slurm
///   with neither spawn nor recovery; refused for Open MPI 5, whose processes fail in MPI_Init
///   under Slurm 22.05's PMIx beyond 2 ranks.
/// - Already under a launcher or in a FiberJob pod: the program itself (the launcher, or the
///   runtime in a pod, decides the ranks); -n is refused there.
int run_program(const RunRequest& request);

}  // namespace fibermpi
