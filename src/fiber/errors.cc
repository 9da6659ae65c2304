#include "fiber/errors.h"

#include <utility>

namespace fiber {

MpiError::MpiError(std::string routine, int code, const std::string& mpi_text)
    : Error(routine + " failed with MPI error code " + std::to_string(code) +
            (mpi_text.empty() ? "" : ": " + mpi_text)),
      routine_(std::move(routine)),
      code_(code) {}

RemoteError::RemoteError(std::string type_name, std::string message)
    : Error(type_name + ": " + message),
      type_name_(std::move(type_name)),
      message_(std::move(message)) {}

ConfigError::ConfigError(const std::string& what, std::string source, std::string key)
    : UsageError(what), source_(std::move(source)), key_(std::move(key)) {}

}  // namespace fiber
