#include "fiber/mpi.h"

#include "fiber/group/group_member.h"
#include "mpi_bridge/environment.h"
#include "mpi_bridge/error.h"

namespace fiber {

void check_mpi(int code, const char* routine) { bridge::check_mpi(code, routine); }

bool owns_mpi() { return bridge::Environment::owns_mpi(); }

MPI_Comm group_comm() {
  const internal::GroupMembership* member = internal::current_group_membership();
  if (!member)
    throw UsageError("fiber::group_comm() can only be called inside a member of a fiber::Group");
  return member->comm;
}

}  // namespace fiber
