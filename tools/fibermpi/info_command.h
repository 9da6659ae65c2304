// `fibermpi info`: this machine, the MPI, the launch site and the configuration, for a person or
// (--json) a script.
#pragma once

#include <string>

namespace fibermpi {

struct InfoRequest {
  bool json = false;
  /// The program whose MPI to describe; empty: the MPI this fibermpi was built against.
  std::string program;
};

/// Prints the report; returns the exit status (0, or 1 when the configuration is invalid: the
/// report says why, as fiber::init would).
int print_info(const InfoRequest& request);

}  // namespace fibermpi
