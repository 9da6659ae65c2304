// Every timeout and limit of the runtime in one place: the ones the configuration file, FIBER_*
// variables and fiber::Config set, and the fixed ones Open MPI's behaviour dictates. Internal.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>

#include "fiber/base/config_file.h"
#include "fiber/init.h"
#include "fiber/spawn_options.h"

namespace fiber::internal {

// The fields of fiber::Config (see init.h for their meaning and defaults) from the configuration
// file, the FIBER_* variables and the program's Config, checked; plus the fixed ones below.
struct Settings : Config {
  /// A started worker (spawned, static rank, joining rank) that has not said hello after this
  /// long is given up on. Children have finished MPI_Init when the spawn returns, so a hello is
  /// due within moments; Open MPI's TCP transport sometimes refuses a new child's connection
  /// ("received unexpected process identifier") and such a child never reports.
  std::chrono::seconds hello_timeout{15};
  /// How long a process waits for an MPI_Finalize that may never return after a kill (Open MPI
  /// 4.1's finalize fence over the static world; Open MPI 5's, ompi#11404).
  std::chrono::seconds finalize_watchdog{10};
  /// After a static-world rank died, the master gives mpirun this long to take note before the
  /// other ranks start the finalize fence that could otherwise wait for the dead one.
  std::chrono::seconds static_rank_settle{2};
  /// A worker checks that its master's process still exists this often.
  std::chrono::milliseconds master_check_interval{200};
  /// Once no thread has waited for this long, the progress thread polls again (a thread that
  /// just stopped waiting usually waits again soon; taking over at once makes two threads trade
  /// the MPI lock on every message).
  std::chrono::microseconds progress_take_over{2000};
  /// How long shutdown waits for queued and in-flight sends to leave, in the master and in a
  /// worker.
  std::chrono::seconds master_drain_limit{5};
  std::chrono::seconds worker_drain_limit{10};
  /// How long shutdown waits for workers still starting up to say hello (they then get their
  /// shutdown).
  std::chrono::seconds starting_workers_limit{10};

  /// Absolute path of the configuration file that was applied; empty when there was none.
  std::string config_file;

  /// Settings from the configuration file, the FIBER_* variables and `config`, in that order of
  /// precedence (see init.h), with the values checked. Throws fiber::ConfigError naming the
  /// source and the key of a value that cannot be used.
  static Settings from(const Config& config);
  /// The same with the environment read through `environment`, and fiber.yaml looked for in
  /// `working_directory`.
  static Settings from(const Config& config, const EnvironmentLookup& environment,
                       const std::filesystem::path& working_directory);
};

}  // namespace fiber::internal
