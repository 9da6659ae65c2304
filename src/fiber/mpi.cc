#include "fiber/mpi.h"

#include "mpi_bridge/environment.h"
#include "mpi_bridge/error.h"

namespace fiber {

void check_mpi(int code, const char* routine) { bridge::check_mpi(code, routine); }

bool owns_mpi() { return bridge::Environment::owns_mpi(); }

}  // namespace fiber
