#include "mpi_bridge/error.h"

#include <mpi.h>

namespace fiber {
namespace {

std::string describe(const std::string& routine, int code) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) {
    return routine + " failed with MPI error code " + std::to_string(code);
  }
  return routine + " failed with MPI error code " + std::to_string(code) + ": " +
         std::string(text, static_cast<size_t>(length));
}

std::string routine_name(const std::string& call) {
  const auto paren = call.find('(');
  return paren == std::string::npos ? call : call.substr(0, paren);
}

}  // namespace

MpiError::MpiError(std::string routine, int code)
    : Error(describe(routine_name(routine), code)), routine_(routine_name(routine)), code_(code) {}

namespace detail {
void check_mpi(int code, const char* routine) {
  if (code != MPI_SUCCESS) throw MpiError(routine, code);
}
}  // namespace detail

}  // namespace fiber
