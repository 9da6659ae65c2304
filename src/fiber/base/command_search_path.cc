#include "fiber/base/command_search_path.h"

#include <unistd.h>

#include <cstdlib>
#include <sstream>

namespace fiber::internal {

std::string command_search_path() {
  if (const char* path = std::getenv("PATH")) return path;
  const size_t size = ::confstr(_CS_PATH, nullptr, 0);
  if (size == 0) return {};
  std::string default_path(size, '\0');
  ::confstr(_CS_PATH, default_path.data(), default_path.size());
  default_path.pop_back();  // the terminating NUL confstr counted
  return default_path;
}

std::vector<std::string> command_search_folders() {
  std::vector<std::string> folders;
  std::stringstream parts(command_search_path());
  for (std::string folder; std::getline(parts, folder, ':');)
    if (!folder.empty()) folders.push_back(folder);
  return folders;
}

std::string command_search_path_after(const std::string& first) {
  const std::string rest = command_search_path();
  return rest.empty() ? first : first + ":" + rest;
}

}  // namespace fiber::internal
