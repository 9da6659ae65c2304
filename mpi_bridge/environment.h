// The MPI environment of this process: initialisation at the thread level the runtime needs,
// how the process was launched, and safe finalisation.
#pragma once

#include <mpi.h>

#include <string>

namespace fiber::bridge {

/// How this process came to be.
enum class LaunchMode {
  kSingleton,    ///< Started without a launcher (./prog): a world of one.
  kStaticWorld,  ///< One of the ranks started by mpirun/srun (world size may be 1).
  kSpawned,      ///< Created by MPI_Comm_spawn from a fibermpi master.
  kConnected,    ///< A job started on its own to join a master's rendezvous (FIBER_CONNECT).
};

/// Marker compiled into every program linked with fibermpi; the spawner looks for it in an
/// executable before spawning, because MPI_Comm_spawn of a non-MPI binary hangs.
extern const char kWorkerAbiMarker[];

class Environment {
 public:
  /// Initialises MPI with MPI_THREAD_MULTIPLE, or accepts an MPI the program already initialised
  /// at that level (throws fiber::Error naming the levels otherwise). For a launcher-less start it
  /// turns on Open MPI's recovery so a killed child cannot take the program down.
  static void initialize(int* argc, char*** argv);
  /// Finalises MPI if initialize() initialised it (or `always`: a worker process, whose program
  /// never gets past fiber::init to finalise it itself) and nobody finalised it yet.
  static void finalize(bool always = false);
  /// Ends this process with `code` after the caller's MPI_Finalize, skipping the program's
  /// destructors and exit handlers (as a Python multiprocessing child does): std::_Exit, except
  /// under MPICH, which tells its process manager of the end from an exit handler of its own
  /// (without it, hydra takes the process for killed and signals the whole job).
  [[noreturn]] static void leave(int code);
  static bool is_initialized();
  static bool is_finalized();
  /// True when this module called MPI_Init (and so owns MPI_Finalize).
  static bool owns_mpi();
  /// Runs `hook` at the start of MPI_Finalize, while MPI still works (an attribute of
  /// MPI_COMM_SELF, whose delete callbacks MPI runs first): for a program that initialised MPI
  /// itself and finalises it before fibermpi's exit handler would run.
  static void call_at_finalize(void (*hook)());

  static LaunchMode launch_mode();
  /// Marks this job as one that joins a master's rendezvous at `address`, found after
  /// initialize() (by a name-server lookup) rather than in FIBER_CONNECT.
  static void join(const std::string& address);
  /// True when this MPI lets separately started jobs meet through a name server started on its
  /// own (Open MPI 4.1's ompi-server; Open MPI 5 has none).
  static bool has_standalone_name_server();
  /// Why jobs started apart cannot join a master (fiber::listen, FIBER_CONNECT) on the MPI this
  /// build uses; empty where they can.
  static std::string joining_limitation();
  /// The rendezvous address this job was started to join (FIBER_CONNECT), or empty.
  static std::string connect_address();
  static int world_rank();
  static int world_size();
  /// Intercommunicator to the spawning parent, or MPI_COMM_NULL.
  static MPI_Comm parent();
  /// True when started by mpirun without launch_environment.h's recovery_option(): a killed
  /// child aborts the job.
  static bool recovery_disabled_under_launcher();
  static std::string hostname();
};

}  // namespace fiber::bridge
