// The MPI a program is linked against, found from the program itself: the libmpi its dynamic
// loader resolves, that library's own version text, and the mpirun of the same installation.
// `fibermpi run` launches a program with this mpirun, not with one from PATH or the tool's own
// build, since Open MPI 4.1 and 5 each refuse the other's programs.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "fiber/base/launch_recipe.h"

namespace fibermpi {

/// What one libmpi says of itself (read in a child process that loads it).
struct MpiLibrary {
  std::string path;          ///< The library file, as the dynamic loader resolved it.
  std::string version_text;  ///< MPI_Get_library_version's text, first line.
  std::string version;       ///< "4.1.4", "5.0.11", "5.0.2".
  fiber::internal::MpiFamily family = fiber::internal::MpiFamily::kOpenMpi5;
  bool has_ulfm = false;  ///< The library has ULFM's MPIX_Comm_agree (Open MPI 5).
};

/// A program's MPI and the launcher that goes with it.
struct ProgramMpi {
  std::string program;  ///< Absolute path of the program.
  MpiLibrary library;
  std::string mpirun;  ///< Absolute path of that installation's mpirun.
  /// Variables that installation's mpirun needs (a relocated Open MPI 5: OPAL_PREFIX, PATH).
  std::vector<std::pair<std::string, std::string>> environment;
};

/// The absolute path of `name`: itself if it holds a slash, else the first executable of that
/// name on PATH. Throws fiber::UsageError naming `name` when there is none.
std::string find_program(const std::string& name);

/// The libmpi that `program`'s dynamic loader resolves (LD_TRACE_LOADED_OBJECTS, as ldd does:
/// the program itself does not run), or nothing when it links none. Throws fiber::UsageError
/// for a file that is not a dynamically linked program.
std::optional<std::string> linked_libmpi(const std::string& program);

/// True when `program` is linked with fibermpi (it carries the runtime's marker), so that its
/// master reports its exit status.
bool links_fibermpi(const std::string& program);

/// Where a Python interpreter's fibermpi is: the package's extension module and the libmpi it
/// loads, found by asking `interpreter` (it loads the extension's libraries, runs none of
/// fibermpi). Nothing when `interpreter` is no Python with the fibermpi package installed.
struct PythonFibermpi {
  std::string extension;
  std::string libmpi;
};
std::optional<PythonFibermpi> python_fibermpi(const std::string& interpreter);

/// True when `program` runs fibermpi's master: it is linked with fibermpi, or it is a Python
/// interpreter with the fibermpi package.
bool runs_fibermpi(const std::string& program);

/// Loads `path` in a child process and asks it its version. Throws fiber::UsageError when it
/// cannot be loaded or is no MPI fibermpi knows.
MpiLibrary probe_library(const std::string& path);

/// The MPI of `program` (linked_libmpi, probe_library; for a Python interpreter, the libmpi its
/// fibermpi extension loads) and its launcher, as mpi_of_library finds them. Throws
/// fiber::UsageError for a program that links no libmpi and is no Python with fibermpi.
ProgramMpi find_program_mpi(const std::string& program);

/// The MPI of library `libmpi` and the mpirun of the installation it belongs to: FIBER_MPIRUN
/// when set, else the `bin/mpirun` beside its `lib` folder (or the folder above: a
/// distribution's lib/<multiarch>) whose `--version` names the library's version. Throws
/// fiber::UsageError naming the folders looked in, and `user` (who needs that MPI).
ProgramMpi mpi_of_library(const std::string& libmpi, const std::string& user);

}  // namespace fibermpi
