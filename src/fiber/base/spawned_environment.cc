#include "fiber/base/spawned_environment.h"

#include <cstdlib>
#include <cstring>

namespace fiber::internal {

std::vector<std::string> environment_as_arguments(
    const std::vector<std::pair<std::string, std::string>>& environment) {
  std::vector<std::string> words;
  words.reserve(environment.size() * 2);
  for (const auto& [name, value] : environment) {
    words.emplace_back(kEnvironmentArgument);
    words.push_back(name + "=" + value);
  }
  return words;
}

void take_environment_arguments(int& argc, char**& argv) {
  int taken = 0;
  while (1 + taken + 1 < argc && std::strcmp(argv[1 + taken], kEnvironmentArgument) == 0) {
    const std::string entry = argv[1 + taken + 1];
    const size_t equals = entry.find('=');
    if (equals == std::string::npos || equals == 0) break;
    ::setenv(entry.substr(0, equals).c_str(), entry.c_str() + equals + 1, 1);
    taken += 2;
  }
  if (taken == 0) return;
  // argv[argc] is a null pointer, which moves down with the rest.
  for (int i = 1; i + taken <= argc; ++i) argv[i] = argv[i + taken];
  argc -= taken;
}

}  // namespace fiber::internal
