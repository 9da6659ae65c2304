// Where and how fibermpi starts worker processes (fiber::Config::spawn).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace fiber {

/// Where and how spawned processes start. Empty fields leave the choice to MPI.
struct SpawnOptions {
  std::string executable;                                ///< Absolute path; empty = this program.
  std::vector<std::string> args;                         ///< argv[1..] of the children.
  std::string host;                                      ///< "host" info key (a host name or list).
  std::string wdir;                                      ///< Working directory of the children.
  std::vector<std::pair<std::string, std::string>> env;  ///< Extra environment variables.
  bool oversubscribe = true;  ///< Allow more processes than cores (spawned jobs do not inherit it).
};

}  // namespace fiber
