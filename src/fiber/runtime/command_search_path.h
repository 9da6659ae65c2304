// Where a command named without a slash is looked for: PATH, or the system's default path where
// PATH is unset (what execvp does then). Both the launcher's start and the fibermpi command's
// search for an MPI's launcher use it, so that they find the same one. Free of MPI. Internal.
#pragma once

#include <string>

namespace fiber::detail {

/// PATH's value; where PATH is unset, the system's default search path (confstr(_CS_PATH)),
/// empty if the system names none. A set but empty PATH stays empty.
std::string command_search_path();

}  // namespace fiber::detail
