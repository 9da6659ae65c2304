// The master's table of processes and worker slots, and the reserve's policy: which idle worker
// a process goes to, which idle workers leave, how many to spawn. No MPI, no messages: the
// master acts on what these decide. Internal; guarded by the runtime's lock.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "fiber/engine/settings.h"
#include "fiber/master/slot.h"
#include "fiber/process/process_state.h"

namespace fiber::internal {

class ProcessTable {
 public:
  using SlotKey = std::pair<MPI_Comm, int>;
  using Slots = std::map<SlotKey, std::unique_ptr<Slot>>;

  explicit ProcessTable(const Settings& settings) : settings_(settings) {}

  // ---- Processes ----
  /// A new process named "<prefix>-<id>".
  std::shared_ptr<ProcessState> create(detail::TaskSpec task, const std::string& name_prefix);
  /// Started and not ended, by id.
  std::map<uint64_t, std::shared_ptr<ProcessState>>& children() { return children_; }
  /// Started, waiting for a slot, in start order.
  std::deque<std::shared_ptr<ProcessState>>& pending() { return pending_; }
  const std::deque<std::shared_ptr<ProcessState>>& pending() const { return pending_; }

  // ---- Slots ----
  /// Registers a worker; returns it.
  Slot& add(std::unique_ptr<Slot> slot);
  Slot* find(MPI_Comm comm, int rank);
  Slots& slots() { return slots_; }
  const Slots& slots() const { return slots_; }
  /// Forgets slots that are gone.
  void erase_gone();

  // ---- The reserve's policy ----
  /// The idle slot `process` should run on, or null: static-world ranks first, then joined
  /// jobs, then the reserve (workers that served a pool before for pool workers, never-used ones
  /// for Processes). Spawned workers of another executable than `executable` serve nothing new.
  Slot* pick_idle_slot(const ProcessState& process, const std::string& executable) const;
  /// Idle spawned workers that should leave at `now`: beyond Settings::reserve_max_idle (those
  /// that served a pool before never-used ones, the longest idle first), idle longer than
  /// reserve_idle_timeout, or running another executable. `*fresh_expired` is set when a
  /// never-used worker expired (nobody wanted one started ahead for a whole timeout).
  std::vector<Slot*> reserve_to_trim(Clock::time_point now, const std::string& executable,
                                     bool* fresh_expired) const;
  /// Workers the spawner should start now: pending processes that no slot is coming for (`coming`
  /// hellos are expected from spawns and starting ranks), plus never-used ones to keep
  /// Settings::processes_ahead ready once Processes have had to be spawned.
  int spawn_wanted(int coming, bool keep_processes_ahead, const std::string& executable) const;

  /// A spawned worker started from another program than `executable` (set_executable since).
  static bool runs(const Slot& slot, const std::string& executable) {
    return !slot.link->spawned || slot.link->executable == executable;
  }

 private:
  const Settings& settings_;
  uint64_t next_process_id_ = 1;
  std::map<uint64_t, std::shared_ptr<ProcessState>> children_;
  std::deque<std::shared_ptr<ProcessState>> pending_;
  Slots slots_;
};

}  // namespace fiber::internal
