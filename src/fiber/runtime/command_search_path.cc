#include "fiber/runtime/command_search_path.h"

#include <unistd.h>

#include <cstdlib>

namespace fiber::detail {

std::string command_search_path() {
  if (const char* path = std::getenv("PATH")) return path;
  const size_t size = ::confstr(_CS_PATH, nullptr, 0);
  if (size == 0) return {};
  std::string default_path(size, '\0');
  ::confstr(_CS_PATH, default_path.data(), default_path.size());
  default_path.pop_back();  // the terminating NUL confstr counted
  return default_path;
}

}  // namespace fiber::detail
