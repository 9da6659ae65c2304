#include "mpi_bridge/spawn.h"

#include <fcntl.h>
#include <mpi.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <memory>

#include "fiber/base/spawned_environment.h"
#include "fiber/function_ref.h"
#include "mpi_bridge/environment.h"
#include "mpi_bridge/error.h"
#include "mpi_bridge/launch_environment.h"

namespace fiber::bridge {
namespace {

struct InfoDeleter {
  void operator()(MPI_Info* info) const {
    if (*info != MPI_INFO_NULL) MPI_Info_free(info);
    delete info;
  }
};
using Info = std::unique_ptr<MPI_Info, InfoDeleter>;

// The info key for the children's environment ("NAME=value" lines): Open MPI 5 renamed it, and
// warns on every spawn that uses the old name.
#if defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5
constexpr const char* kEnvInfoKey = "PMIX_ENVAR";
#else
constexpr const char* kEnvInfoKey = "env";
#endif

Info make_info(const SpawnOptions& options) {
  Info info(new MPI_Info(MPI_INFO_NULL));
  FIBER_MPI_CHECK(MPI_Info_create(info.get()));
  if (!options.host.empty()) FIBER_MPI_CHECK(MPI_Info_set(*info, "host", options.host.c_str()));
  if (!options.wdir.empty()) FIBER_MPI_CHECK(MPI_Info_set(*info, "wdir", options.wdir.c_str()));
  if (options.oversubscribe) FIBER_MPI_CHECK(MPI_Info_set(*info, "map_by", ":OVERSUBSCRIBE"));
  if (!options.env.empty()) {
    std::string env;
    for (const auto& [name, value] : options.env) {
      if (name.empty() || name.find_first_of("=\n") != std::string::npos ||
          value.find('\n') != std::string::npos) {
        throw SpawnError("spawn: invalid environment entry '" + name + "'");
      }
      if (!env.empty()) env += '\n';
      env += name + "=" + value;
    }
    FIBER_MPI_CHECK(MPI_Info_set(*info, kEnvInfoKey, env.c_str()));
  }
  return info;
}

bool file_contains(const std::string& path, const char* needle) {
  // Mapped, not read into memory: a binary with debug information is tens of megabytes.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat info {};
  const bool sized = ::fstat(fd, &info) == 0 && info.st_size > 0;
  void* mapped =
      sized ? ::mmap(nullptr, static_cast<size_t>(info.st_size), PROT_READ, MAP_PRIVATE, fd, 0)
            : MAP_FAILED;
  ::close(fd);
  if (mapped == MAP_FAILED) return false;
  const bool found =
      ::memmem(mapped, static_cast<size_t>(info.st_size), needle, std::strlen(needle)) != nullptr;
  ::munmap(mapped, static_cast<size_t>(info.st_size));
  return found;
}

}  // namespace

void check_spawnable(const std::string& path) {
  if (path.empty() || path.front() != '/') {
    throw SpawnError("cannot spawn '" + path + "': the executable must be an absolute path");
  }
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) {
    throw SpawnError("cannot spawn '" + path + "': " + std::strerror(errno));
  }
  if (!S_ISREG(info.st_mode) || ::access(path.c_str(), X_OK) != 0) {
    throw SpawnError("cannot spawn '" + path + "': not an executable file");
  }
  // Where fibermpi lives in a shared module (a Python extension), the program spawned is an
  // interpreter that loads it: only the worker's hello can tell its build.
  auto& modules = detail::ModuleTable::instance();
  if (modules.engine_in_main_executable() &&
      detail::build_id_of_file(path) != modules.engine_module_id() &&
      !file_contains(path, kWorkerAbiMarker)) {
    throw SpawnError("cannot spawn '" + path + "': it is not a program linked with fibermpi");
  }
}

Communicator spawn(const SpawnOptions& options, int count) {
  if (count <= 0)
    throw SpawnError("spawn: process count must be positive, got " + std::to_string(count));
  const std::string executable =
      options.executable.empty() ? detail::ModuleTable::program_path() : options.executable;
  check_spawnable(executable);
  const Info info = make_info(options);
#if defined(MPICH_VERSION)
  // Hydra ignores the "env" info key (make_info checked the entries): the child's command line
  // carries them (fiber/base/spawned_environment.h).
  std::vector<std::string> words = internal::environment_as_arguments(options.env);
  words.insert(words.end(), options.args.begin(), options.args.end());
#else
  const std::vector<std::string>& words = options.args;
#endif
  std::vector<char*> argv;
  for (const auto& arg : words) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  MPI_Comm intercomm = MPI_COMM_NULL;
  std::vector<int> errors(static_cast<size_t>(count), MPI_SUCCESS);
  const int code = MPI_Comm_spawn(executable.c_str(), argv.data(), count, *info, 0, MPI_COMM_SELF,
                                  &intercomm, errors.data());
  if (code != MPI_SUCCESS) {
    const std::string hint = root_refusal_hint();
    throw SpawnError("MPI_Comm_spawn of " + std::to_string(count) + " x '" + executable +
                     "' failed: " + mpi_error("MPI_Comm_spawn", code).what() +
                     (hint.empty() ? "" : " (" + hint + ")"));
  }
  return Communicator(intercomm);
}

}  // namespace fiber::bridge
