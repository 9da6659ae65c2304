// Starting and stopping the fibermpi runtime.
#pragma once

#include <chrono>
#include <string>

#include "fiber/spawn_options.h"

namespace fiber {

/// Settings of the runtime, given to init().
///
/// Where the values come from, each source overriding the ones before it:
///   1. the defaults below;
///   2. the configuration file: the file the environment variable FIBER_CONFIG names (a relative
///      path is taken from the working directory; a file that does not exist stops init), else
///      `fiber.yaml` in the working directory if there is one;
///   3. the FIBER_* environment variables (one per key; an empty one counts as unset);
///   4. the program: every field of the Config passed to init() whose value differs from a
///      default-constructed Config's. A field left at (or set back to) its default value does
///      not count as set by the program, so the file or a variable still sets it: to insist on
///      a default value, remove the key from the file and leave its variable unset.
///      `spawn.env` is merged by variable name instead: the file's variables, then
///      FIBER_SPAWN_ENV's, then the program's, a later one replacing one of the same name.
/// An unknown key, a value of the wrong type or out of range (from any source) makes init()
/// throw fiber::ConfigError naming the file or variable, the key and what is wrong (and, for an
/// unknown key, the valid ones).
///
/// The file is YAML, a mapping of the keys below (`spawn` a nested mapping), e.g.
///     heartbeat_timeout: 10s
///     pid_checks: false
///     spawn: {env: {OMP_NUM_THREADS: 1}, oversubscribe: true}
/// A duration is a number in the key's unit, or a number with a unit: 500ms, 1.5s, 2m, 1h (it
/// must come to a whole number of the key's unit). A boolean is true/false (yes/no, on/off, 1/0
/// also do). A FIBER_* variable takes the same text as the file; FIBER_SPAWN_ARGS and
/// FIBER_SPAWN_ENV take a YAML flow list or mapping: '[--lr, "3e-4"]', '{OMP_NUM_THREADS: 1}'.
///
/// key                   type (unit)          default  range           variable
/// spawn.executable      string (path)        ""       -               FIBER_SPAWN_EXECUTABLE
/// spawn.args            list of strings      []       -               FIBER_SPAWN_ARGS
/// spawn.host            string               ""       -               FIBER_SPAWN_HOST
/// spawn.wdir            string               ""       -               FIBER_SPAWN_WDIR
/// spawn.env             mapping name: value  {}       -               FIBER_SPAWN_ENV
/// spawn.oversubscribe   boolean              true     -               FIBER_SPAWN_OVERSUBSCRIBE
/// liveness_interval     duration (ms)        20       1 ms - 1 d      FIBER_LIVENESS_INTERVAL_MS
/// heartbeat_interval    duration (ms)        500      1 ms - 1 d      FIBER_HEARTBEAT_INTERVAL_MS
/// heartbeat_timeout     duration (ms)        5000     1 ms - 1 d (1)  FIBER_HEARTBEAT_TIMEOUT_MS
/// pid_checks            boolean              true     -               FIBER_PID_CHECKS
/// spawn_timeout         duration (s)         120      1 s - 1 d       FIBER_SPAWN_TIMEOUT_S
/// max_spawn_batch       integer              8        1 - 1000000     FIBER_MAX_SPAWN_BATCH
/// min_spawn_batch       integer              4        1 - 1000000     FIBER_MIN_SPAWN_BATCH
/// reserve_max_idle      integer              8        0 - 1000000     FIBER_RESERVE_MAX_IDLE
/// reserve_idle_timeout  duration (s)         60       0 s - 365 d     FIBER_RESERVE_IDLE_TIMEOUT_S
/// processes_ahead       integer              2        0 - 1000000     FIBER_PROCESSES_AHEAD
/// pod_start_timeout     duration (s)         300      1 s - 1 d       FIBER_POD_START_TIMEOUT_S
/// pod_idle_timeout      duration (s)         30       0 s - 365 d     FIBER_POD_IDLE_TIMEOUT_S
/// bind                  string               "core"   core, none      FIBER_BIND
/// log_level             string               "warning" debug, info,   FIBER_LOG_LEVEL
///                                                      warning, error, off
/// log_dir               string               ""       -               FIBER_LOG_DIR
/// (1) and longer than heartbeat_interval.
struct Config {
  /// How spawned processes start: executable (default: this program), host, wdir, env,
  /// oversubscription (default on, so 8 processes run on 2 cores). The FIBER_SPAWN_* variables
  /// override (see the table above).
  SpawnOptions spawn;
  /// How often the master checks that the workers on its host are still alive.
  /// FIBER_LIVENESS_INTERVAL_MS overrides.
  std::chrono::milliseconds liveness_interval{20};
  /// Workers send a heartbeat this often (any message also counts as a sign of life).
  /// FIBER_HEARTBEAT_INTERVAL_MS overrides.
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
  /// FIBER_MAX_SPAWN_BATCH overrides.
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
  /// FIBER_PROCESSES_AHEAD overrides.
  int processes_ahead = 2;
  /// Kubernetes mode (a program run as a FiberJob's launcher): worker pods asked for that have
  /// not joined within this long (unschedulable, an image that does not pull) fail the
  /// processes waiting for them with fiber::SpawnError. FIBER_POD_START_TIMEOUT_S overrides.
  std::chrono::seconds pod_start_timeout{300};
  /// Kubernetes mode: a worker pod all of whose workers have been idle this long is released
  /// (named in the job's workersToDelete, its replica given back). 0 releases it as soon as it
  /// is idle. FIBER_POD_IDLE_TIMEOUT_S overrides.
  std::chrono::seconds pod_idle_timeout{30};
  /// How the worker processes fibermpi starts itself (spawned, on the master's host) are bound
  /// while they run a pool's worker or a Process: "core" binds each to a core of its own (hwloc;
  /// spread across packages and NUMA nodes first), and once every core holds one, more run
  /// unbound; "none" binds nothing. Ranks that mpirun or Slurm placed keep their launcher's
  /// binding. FIBER_BIND overrides.
  std::string bind = "core";
  /// The least important lines the runtime logs (to stderr): "debug", "info" (also each
  /// worker's binding), "warning" (a worker declared dead, a stuck spawn), "error" or "off".
  /// Each line names the time (UTC), host, role and pid. FIBER_QUIET=1 leaves errors only.
  /// Spawned workers log at the master's level. FIBER_LOG_LEVEL overrides.
  std::string log_level = "warning";
  /// A directory where every process (the master and each worker) also writes its log lines
  /// to a file of its own, fibermpi-HOST-ROLE-PID.log; "" for none. FIBER_LOG_DIR overrides.
  std::string log_dir;
};

/// Starts the runtime: initialises MPI (or adopts the program's MPI_THREAD_MULTIPLE one) and
/// detects how the program was launched. In the master it returns; in a worker process (spawned,
/// or a rank > 0 of an mpirun world) it serves tasks and exits, never returning. Call it first
/// thing in main(). A second call throws fiber::UsageError; a configuration that cannot be used
/// (see Config) throws fiber::ConfigError.
void init(int& argc, char**& argv, Config config = {});

/// Opens (once) a rendezvous that independently started jobs join as workers, and returns its
/// address. Start such a job with FIBER_CONNECT=<address> (or --fiber-connect <address>): every
/// rank becomes a worker; running pools grow onto it, and losing it loses no task. Under Open
/// MPI 4.1 the master and the joining jobs must all be started by mpirun with the same
/// --ompi-server file:<uri> (run `ompi-server -r <uri>` first). On MPICH it throws
/// fiber::UsageError, and so does init() in a job started with FIBER_CONNECT: MPICH's
/// MPI_Comm_accept holds its global lock while it waits, which would stall the master.
///
/// Who may join: with FIBER_JOIN_TOKEN_FILE naming a file that holds a secret token (16 to 4096
/// bytes, e.g. `openssl rand -hex 32`) in the master and in the joining jobs, a job joins only
/// after it and the master have proven the token to each other (HMACs over fresh nonces, before
/// any MPI connect; the token never travels), and the address returned is then
/// "fiber-join://HOST:PORT" (this machine's host name and a TCP port on every address), not an
/// MPI port. A job that cannot prove the token is refused and logged, and the master's pools go
/// on. Without FIBER_JOIN_TOKEN_FILE the address is the MPI port and anyone who reaches it may
/// join (a warning says so; FIBER_QUIET=1 hides it). A bad token file throws fiber::UsageError
/// from init(), naming the file.
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
