// Starting and stopping the fibermpi runtime.
#pragma once

#include <chrono>
#include <string>

#include "fiber/spawn_options.h"

namespace fiber {

/// Settings of the runtime, given to init().
struct Config {
  /// How spawned processes start: executable (default: this program), host, wdir, env,
  /// oversubscription (default on, so 8 processes run on 2 cores).
  SpawnOptions spawn;
  /// How often the master checks that the workers on its host are still alive.
  std::chrono::milliseconds liveness_interval{20};
  /// Workers send a heartbeat this often (any message also counts as a sign of life).
  std::chrono::milliseconds heartbeat_interval{500};
  /// A worker the master cannot check by pid (on another host, or every worker when pid checks
  /// are off) that is silent this long is declared dead: its process ends as killed, its pool
  /// tasks run elsewhere. A task running for hours is fine: heartbeats come from the worker's
  /// progress thread. FIBER_HEARTBEAT_TIMEOUT_MS overrides.
  std::chrono::milliseconds heartbeat_timeout{5000};
  /// Detect the death of workers on the master's host by their pid (fast: about two liveness
  /// intervals). Off (FIBER_PID_CHECKS=0) leaves heartbeats alone to tell, as for remote hosts.
  bool pid_checks = true;
  /// An MPI_Comm_spawn still running after this long is declared stuck: the processes waiting
  /// for it fail with fiber::SpawnError instead of waiting forever. FIBER_SPAWN_TIMEOUT_S
  /// overrides.
  std::chrono::seconds spawn_timeout{120};
  /// Most processes started by one MPI_Comm_spawn call; more pending starts take several calls.
  int max_spawn_batch = 8;
  /// Fewest processes one MPI_Comm_spawn call starts: a spawn costs a pause of the master's
  /// traffic (0.3-1.5 s) whatever its size, so the extra ones wait in the reserve for the next
  /// pool, replacement or Process. 1 spawns exactly what is asked for. FIBER_MIN_SPAWN_BATCH
  /// overrides.
  int min_spawn_batch = 4;
  /// The warm reserve: spawned worker processes that are idle (their pool ended, or started
  /// ahead) are kept for later pools and Processes instead of exiting, so a program that makes
  /// many pools, or replaces workers, does not pay a spawn each time. A worker that served one
  /// pool may serve the next (its initializer runs again); a Process always gets a process that
  /// has run nothing else. At most `reserve_max_idle` are kept (the oldest leave first, workers
  /// that served a pool before never-used ones), each for at most `reserve_idle_timeout`.
  /// 0 idle workers turns the reserve off. FIBER_RESERVE_MAX_IDLE and
  /// FIBER_RESERVE_IDLE_TIMEOUT_S override.
  int reserve_max_idle = 8;
  std::chrono::seconds reserve_idle_timeout{60};
  /// Once the program has started a Process, keep this many never-used workers started ahead in
  /// the reserve, so that the next Process starts at once instead of waiting for a spawn.
  int processes_ahead = 2;
};

/// Starts the runtime: initialises MPI (or adopts the program's MPI_THREAD_MULTIPLE one) and
/// detects how the program was launched. In the master it returns; in a worker process (spawned,
/// or a rank > 0 of an mpirun world) it serves tasks and exits, never returning. Call it first
/// thing in main(). A second call throws fiber::UsageError.
void init(int& argc, char**& argv, Config config = {});

/// Opens (once) a rendezvous that independently started jobs join as workers, and returns its
/// address. Start such a job with FIBER_CONNECT=<address> (or --fiber-connect <address>): every
/// rank becomes a worker; running pools grow onto it, and losing it loses no task. Under Open
/// MPI 4.1 the master and the joining jobs must all be started by mpirun with the same
/// --ompi-server file:<uri> (run `ompi-server -r <uri>` first).
std::string listen();

/// True between init() and shutdown().
bool is_initialized();

/// Ends the runtime in the master: joins running children (terminating daemonic ones), releases
/// idle workers and finalises MPI if init() initialised it. Runs by itself at exit; calling it
/// earlier is allowed, and later calls do nothing.
void shutdown();

/// Sets the program spawned for new processes (like multiprocessing.set_executable). It must be
/// a program linked with fibermpi; a different build is refused at handshake.
void set_executable(const std::string& path);

}  // namespace fiber
