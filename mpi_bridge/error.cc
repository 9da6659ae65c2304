#include "mpi_bridge/error.h"

#include <mpi.h>

namespace fiber::bridge {

std::string mpi_error_text(int code) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) return {};
  return std::string(text, static_cast<size_t>(length));
}

MpiError mpi_error(const std::string& routine, int code) {
  // FIBER_MPI_CHECK passes the whole call; its routine is the name before the parenthesis.
  const auto paren = routine.find('(');
  return MpiError(paren == std::string::npos ? routine : routine.substr(0, paren), code,
                  mpi_error_text(code));
}

void check_mpi(int code, const char* routine) {
  if (code != MPI_SUCCESS) throw mpi_error(routine, code);
}

}  // namespace fiber::bridge
