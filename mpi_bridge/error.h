// The one place MPI return codes are checked: a failing call becomes fiber::MpiError naming the
// routine, the code and MPI's own text for it.
#pragma once

#include <string>

#include "fiber/errors.h"

namespace fiber::bridge {

/// MPI's text for an error code ("MPI_ERR_PROC_FAILED: Process Failure").
std::string mpi_error_text(int code);

/// The MpiError for `code` returned by `routine` (a routine name or the call's source text).
MpiError mpi_error(const std::string& routine, int code);

/// Throws MpiError when `code` is not MPI_SUCCESS.
void check_mpi(int code, const char* routine);

}  // namespace fiber::bridge

/// Calls an MPI routine and throws fiber::MpiError naming it when it fails.
#define FIBER_MPI_CHECK(call) ::fiber::bridge::check_mpi((call), #call)
