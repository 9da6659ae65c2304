#include "fiber/errors.h"

#include <utility>

namespace fiber {

RemoteError::RemoteError(std::string type_name, std::string message)
    : Error(type_name + ": " + message),
      type_name_(std::move(type_name)),
      message_(std::move(message)) {}

}  // namespace fiber
