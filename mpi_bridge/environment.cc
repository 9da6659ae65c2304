#include "mpi_bridge/environment.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>

#include "mpi_bridge/error.h"
#include "mpi_bridge/launch_environment.h"

namespace fiber::bridge {

const char kWorkerAbiMarker[] = "fibermpi-worker-abi-1";

namespace {

bool g_owns_mpi = false;
LaunchMode g_mode = LaunchMode::kSingleton;
// The status leave() ends the process with, once it has begun to; -1 before.
std::atomic<int> g_leaving_with{-1};

// Registered before MPI_Init, so it runs after the exit handlers MPI registers there: ends a
// process that leave() began to end before any of the program's own ran.
void end_after_mpi_exit_handlers() {
  if (const int code = g_leaving_with.load(); code >= 0) std::_Exit(code);
}

const char* thread_level_name(int level) {
  switch (level) {
    case MPI_THREAD_SINGLE:
      return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED:
      return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED:
      return "MPI_THREAD_SERIALIZED";
    case MPI_THREAD_MULTIPLE:
      return "MPI_THREAD_MULTIPLE";
    default:
      return "an unknown thread level";
  }
}

}  // namespace

void Environment::initialize(int* argc, char*** argv) {
  // Referenced so the linker keeps the marker the spawner searches executables for.
  static volatile const char* keep_marker = kWorkerAbiMarker;
  (void)keep_marker;

  int provided = MPI_THREAD_SINGLE;
  // Also where the program initialised MPI itself (mpi4py imported first): a launcher-less
  // program's MPI starts its runtime at the first spawn, which reads the environment then.
  prepare_process_environment();
  if (!is_initialized()) {
    if (built_against_mpi() == internal::MpiFamily::kMpich)
      std::atexit(end_after_mpi_exit_handlers);
    FIBER_MPI_CHECK(MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided));
    g_owns_mpi = true;
  } else {
    if (is_finalized()) throw Error("fiber::init: MPI was already finalized");
    // Such a process cannot run itself again under mpiexec (launch_environment.h): MPICH's
    // process manager would kill its caller's whole process group at a worker's loss.
    if (built_against_mpi() == internal::MpiFamily::kMpich && !internal::started_by_launcher()) {
      throw UsageError(
          "fiber::init: this program initialised MPICH itself without a launcher; start it with "
          "mpiexec (mpiexec -n 1 ./prog), or let fiber::init initialise MPI");
    }
    FIBER_MPI_CHECK(MPI_Query_thread(&provided));
  }
  if (provided < MPI_THREAD_MULTIPLE) {
    throw Error(
        std::string("fiber::init: fibermpi needs MPI_THREAD_MULTIPLE but MPI provides ") +
        thread_level_name(provided) +
        (g_owns_mpi ? "" : "; initialise MPI with MPI_Init_thread(..., MPI_THREAD_MULTIPLE, ...)"));
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
  if (parent() != MPI_COMM_NULL) {
    g_mode = LaunchMode::kSpawned;
  } else if (!connect_address().empty()) {
    g_mode = LaunchMode::kConnected;
  } else if (internal::started_by_launcher()) {
    g_mode = LaunchMode::kStaticWorld;
  } else {
    g_mode = LaunchMode::kSingleton;
  }
}

void Environment::finalize(bool always) {
  if ((g_owns_mpi || always) && is_initialized() && !is_finalized()) MPI_Finalize();
}

void Environment::leave(int code) {
  if (built_against_mpi() != internal::MpiFamily::kMpich || !g_owns_mpi) std::_Exit(code);
  g_leaving_with.store(std::max(code, 0));
  std::exit(code);
}

bool Environment::is_initialized() {
  int flag = 0;
  MPI_Initialized(&flag);
  return flag != 0;
}

bool Environment::is_finalized() {
  int flag = 0;
  MPI_Finalized(&flag);
  return flag != 0;
}

bool Environment::owns_mpi() { return g_owns_mpi; }

void Environment::call_at_finalize(void (*hook)()) {
  auto run_hook = [](MPI_Comm, int, void*, void* extra) -> int {
    reinterpret_cast<void (*)()>(extra)();
    return MPI_SUCCESS;
  };
  int keyval = MPI_KEYVAL_INVALID;
  FIBER_MPI_CHECK(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, run_hook, &keyval,
                                         reinterpret_cast<void*>(hook)));
  FIBER_MPI_CHECK(MPI_Comm_set_attr(MPI_COMM_SELF, keyval, nullptr));
}

LaunchMode Environment::launch_mode() { return g_mode; }

void Environment::join(const std::string& address) {
  ::setenv("FIBER_CONNECT", address.c_str(), 1);
  g_mode = LaunchMode::kConnected;
}

bool Environment::has_standalone_name_server() {
  // Open MPI 5 has none; MPICH's hydra_nameserver is not wired into the joining modes.
  return built_against_mpi() == internal::MpiFamily::kOpenMpi4;
}

std::string Environment::joining_limitation() {
  if (built_against_mpi() != internal::MpiFamily::kMpich) return {};
  // MPICH's MPI_Comm_accept waits for a connecting job in a loop that keeps the library's
  // global lock (measured on the 5.0.2 wheel: the master's other threads block in MPI_Isend and
  // MPI_Improbe until a job connects), and the master always has an accept waiting.
  return "jobs started apart cannot join a master on MPICH: its MPI_Comm_accept holds MPICH's "
         "global lock while it waits for a job to connect, which stops every other MPI call of "
         "the master; build with -DFIBER_MPI=openmpi4 for joining jobs";
}

std::string Environment::connect_address() {
  const char* address = std::getenv("FIBER_CONNECT");
  return address ? address : "";
}

int Environment::world_rank() {
  int rank = 0;
  FIBER_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  return rank;
}

int Environment::world_size() {
  int size = 1;
  FIBER_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size));
  return size;
}

MPI_Comm Environment::parent() {
  MPI_Comm comm = MPI_COMM_NULL;
  FIBER_MPI_CHECK(MPI_Comm_get_parent(&comm));
  return comm;
}

bool Environment::recovery_disabled_under_launcher() {
  if (!internal::started_by_launcher() || *recovery_variable() == '\0') return false;
  const char* recovery = std::getenv(recovery_variable());
  return recovery == nullptr || std::strcmp(recovery, "1") != 0;
}

std::string Environment::hostname() {
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  return name;
}

}  // namespace fiber::bridge
