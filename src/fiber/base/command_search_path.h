// Where a command named without a slash is looked for: PATH, or the system's default path where
// PATH is unset (what execvp does then). Both the launcher's start and the fibermpi command's
// search for an MPI's launcher use it, so that they find the same one. Free of MPI. Internal.
#pragma once

#include <string>
#include <vector>

namespace fiber::internal {

/// PATH's value; where PATH is unset, the system's default search path (confstr(_CS_PATH)),
/// empty if the system names none. A set but empty PATH stays empty.
std::string command_search_path();

/// The folders of command_search_path(), in order, empty entries left out.
std::vector<std::string> command_search_folders();

/// `first`, then command_search_path(): a PATH value that looks in `first` before the rest.
std::string command_search_path_after(const std::string& first);

}  // namespace fiber::internal
