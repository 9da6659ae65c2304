// Error types shared by every layer, and the one place MPI return codes are checked.
#pragma once

#include <stdexcept>
#include <string>

namespace fiber {

/// Root of every exception fibermpi throws.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

/// An MPI routine returned an error code. Carries the routine, the code and MPI's own text for it.
class MpiError : public Error {
 public:
  MpiError(std::string routine, int code);
  const std::string& routine() const noexcept { return routine_; }
  int code() const noexcept { return code_; }

 private:
  std::string routine_;
  int code_;
};

/// A process could not be started: missing executable, a refused handshake, MPI_Comm_spawn failing.
class SpawnError : public Error {
 public:
  explicit SpawnError(const std::string& what) : Error(what) {}
};

/// A message that does not decode: wrong size, unknown function, corrupt payload.
class ProtocolError : public Error {
 public:
  explicit ProtocolError(const std::string& what) : Error(what) {}
};

namespace detail {
/// Throws MpiError when `code` is not MPI_SUCCESS.
void check_mpi(int code, const char* routine);
}  // namespace detail

}  // namespace fiber

/// Calls an MPI routine and throws fiber::MpiError naming it when it fails.
#define FIBER_MPI_CHECK(call) ::fiber::detail::check_mpi((call), #call)
