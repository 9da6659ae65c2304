// Using MPI directly in a fibermpi program: the one public header that includes <mpi.h>.
//
// fiber::init initialises MPI with MPI_THREAD_MULTIPLE (or adopts an MPI the program initialised
// at that level before calling it), so the master may call MPI itself. Under `mpirun -n N` the
// ranks 1..N-1 of MPI_COMM_WORLD serve fibermpi's pools and Processes, so a collective over
// MPI_COMM_WORLD in the master never completes: a ported code keeps its own collectives in a
// fiber::Group (fiber::group_comm() below), which runs beside Pool::map. Check the codes MPI
// returns with FIBER_CHECK_MPI to get fibermpi's error type.
#pragma once

#include <mpi.h>

#include "fiber/errors.h"

namespace fiber {

/// Throws fiber::MpiError naming `routine`, the code and MPI's own text for it when `code` is
/// not MPI_SUCCESS.
void check_mpi(int code, const char* routine);

/// True when fiber::init initialised MPI (and fibermpi will finalise it at exit); false when the
/// program initialised MPI itself and finalises it.
bool owns_mpi();

/// Inside a member of a fiber::Group: the intracommunicator of all its members, ranked as
/// fiber::group_rank() says; what an SPMD code used MPI_COMM_WORLD for. fibermpi owns it (never
/// free it) and ends it once every member's function has returned. A failed MPI call on it ends
/// the member with exit code 1 and MPI's error text (its group then stops the others) instead of
/// returning garbage or aborting the job; a program may set its own error handler on it
/// (MPI_Comm_set_errhandler(fiber::group_comm(), MPI_ERRORS_RETURN)). Throws fiber::UsageError
/// outside a member.
MPI_Comm group_comm();

}  // namespace fiber

/// Calls an MPI routine and throws fiber::MpiError naming it when it fails:
/// FIBER_CHECK_MPI(MPI_Allreduce(...));
#define FIBER_CHECK_MPI(call) ::fiber::check_mpi((call), #call)
