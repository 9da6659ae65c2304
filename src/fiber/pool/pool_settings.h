// How a pool is made, as the master's side of it and a nested pool's request both carry it.
// Internal.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

#include "fiber/invoke.h"

namespace fiber::internal {

/// How a pool is made; see fiber::Pool::Options for the meaning.
struct PoolSettings {
  int processes = 0;
  std::optional<detail::TaskSpec> initializer;
  uint64_t maxtasksperchild = 0;
  int tasks_in_flight_per_worker = 16;
  bool cover_spawn_pauses = true;
  int max_task_retries = 3;
  /// Autoscaling: between min and max workers (max 0 = fixed size), growing while tasks wait
  /// and retiring workers idle longer than idle_timeout.
  int min_processes = 0;
  int max_processes = 0;
  std::chrono::milliseconds idle_timeout{0};
  /// Grow onto workers of jobs that join through the rendezvous.
  bool take_joined_workers = true;
  /// Workers only in processes that ran nothing before, each leaving with its process.
  bool fresh_processes = false;
  /// Each worker's share (Pool::Options): cores it is bound to (0 = 1), memory, GPUs.
  int cpus_per_worker = 0;
  uint64_t memory_per_worker = 0;
  int gpus_per_worker = 0;
};

}  // namespace fiber::internal
