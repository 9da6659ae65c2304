// What a worker's code starts (nesting: a Process, Pool or Group made inside a Process, a pool
// task or a group member): the master owns every process of the run and starts them on the
// worker's behalf; here are the worker's mirrors of them, kept up to date by the master's events,
// and the requests that start, control and release them. Internal.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "fiber/engine/progress_engine.h"
#include "fiber/group/group_client.h"
#include "fiber/group/group_settings.h"
#include "fiber/nesting/nested_messages.h"
#include "fiber/pool/pool_client.h"
#include "fiber/pool/pool_settings.h"
#include "fiber/process/process_control.h"
#include "fiber/wire/reply.h"

namespace fiber::internal {

class MasterLink;
class RemotePool;
class RemoteGroup;

class NestedClient final : public ProcessControl {
 public:
  /// Serves the master's events about what this worker's code started (kProcessEvent,
  /// kJobChunk, kGroupEvent) through `link`, which must outlive their arrival.
  NestedClient(ProgressEngine& engine, MasterLink& link);
  NestedClient(const NestedClient&) = delete;
  NestedClient& operator=(const NestedClient&) = delete;

  // ---- ProcessControl ----
  std::shared_ptr<ProcessState> new_process(detail::TaskSpec task) override;
  void start_process(const std::shared_ptr<ProcessState>& process) override;
  void terminate(const std::shared_ptr<ProcessState>& process, int signal) override;
  bool wait_ended(const std::shared_ptr<ProcessState>& process,
                  std::optional<Clock::time_point> deadline) override;
  int wait_pid(const std::shared_ptr<ProcessState>& process) override;
  std::vector<std::shared_ptr<ProcessState>> live_children() override;

  std::shared_ptr<PoolClient> make_pool(PoolSettings settings);
  std::shared_ptr<GroupClient> make_group(GroupSettings settings);

  /// The process this worker ran is over: its children end with it, as at a Python process's
  /// exit (the daemonic ones are terminated, the others waited for).
  void end_children();

  // For RemotePool and RemoteGroup.
  /// Sends a request and returns its reply; rethrows the master's error as its own type.
  wire::Reply request(Outgoing message);
  ProgressEngine& engine() { return engine_; }
  void add_pool_locked(uint64_t id, RemotePool* pool) { pools_[id] = pool; }
  void remove_pool_locked(uint64_t id) { pools_.erase(id); }
  void add_group_locked(uint64_t id, RemoteGroup* group) { groups_[id] = group; }
  void remove_group_locked(uint64_t id) { groups_.erase(id); }

 private:
  void on_process_event_locked(const wire::ProcessEvent& event);
  void apply_locked(ProcessState& process, const wire::ProcessEvent& event);

  ProgressEngine& engine_;
  MasterLink& link_;
  uint64_t next_local_id_ = uint64_t{1} << 62;  ///< Ids of unstarted Processes made here.
  uint64_t next_name_ = 1;
  std::map<uint64_t, std::shared_ptr<ProcessState>> children_;  ///< Started, by master id.
  /// Events that arrived before the reply naming their process was read.
  std::map<uint64_t, std::vector<wire::ProcessEvent>> early_events_;
  std::map<uint64_t, RemotePool*> pools_;
  std::map<uint64_t, RemoteGroup*> groups_;
};

}  // namespace fiber::internal
