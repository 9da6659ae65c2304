// A worker's side of the runtime: its link to the master. The handshake, the messages it sends
// (numbered, nothing after its last word), what it receives (checked against the master's
// numbering, then handed to the handler its kind has: the assignment mailbox, request replies,
// and the handlers the features register: the pool and group inboxes, the nesting client),
// heartbeats, and requests and their replies. Internal.
#pragma once

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>

#include "fiber/engine/progress_engine.h"
#include "fiber/engine/settings.h"
#include "fiber/invoke.h"
#include "fiber/wire/handler_table.h"
#include "fiber/wire/outgoing.h"
#include "fiber/wire/reply.h"

namespace fiber::internal {

/// What a worker is told to do next.
struct Assignment {
  bool shutdown = false;
  bool run_ends = false;    ///< A shutdown every idle worker gets at once (wire::Shutdown).
  bool stay_after = false;  ///< Serve on after this process ends (wire::Run::stay_after).
  uint64_t process_id = 0;
  std::string name;
  detail::TaskSpec task;
  std::string visible_gpus;  ///< wire::Run::visible_gpus.
};

class MasterLink final : public MessageSink {
 public:
  /// `link`: the communicator to the master, whose rank on it is `master_rank`.
  MasterLink(const Settings& settings, ProgressEngine& engine, Link& link, int master_rank,
             bool spawned, bool joined);
  ~MasterLink();
  MasterLink(const MasterLink&) = delete;
  MasterLink& operator=(const MasterLink&) = delete;

  /// This worker process's link to its master (there is one per worker process); UsageError in
  /// a process that is no worker. What a worker's code (a pool worker, a group member) reaches
  /// its master, engine and settings through.
  static MasterLink& current();
  ProgressEngine& engine() { return engine_; }
  const Settings& settings() const { return settings_; }

  /// Says hello and waits for the master's answer; a refused worker finishes (exit status 0).
  void handshake();
  /// The next process to run, or shutdown.
  Assignment next_assignment();
  /// Numbers the message and sends it to the master (dropped once the last word is sent).
  void send(const Outgoing& message);
  /// Tells the master a process ended; `worker_leaves` when this worker process ends with it:
  /// its last message.
  void report_exit(uint64_t process_id, int code, const std::string& error, bool worker_leaves);
  /// Answers the master's kShutdown: its last message.
  void say_goodbye();
  /// Ends this worker process now, whatever its threads are doing (a group member stopped with
  /// its group, or whose MPI call on the group's communicator failed): `process` is reported
  /// ended with `code` as the last message, then the process exits without finalising MPI.
  [[noreturn]] void end_process_now(uint64_t process, int code, const std::string& error);

  /// Sends a request (its id set here) and waits for the master's reply, whatever its outcome.
  wire::Reply request(Outgoing message);
  /// Serves messages of `kind` from the master with `handler` (with the lock held), for the
  /// parts of the worker built on the link (nesting/nested_client.h). Before the link runs.
  void serve(Kind kind, wire::HandlerTable<>::Handler handler) {
    handlers_.add(kind, std::move(handler));
  }

  bool spawned() const noexcept { return spawned_; }
  bool joined() const noexcept { return joined_; }
  /// The master's pid where it runs on this host (known after the handshake), else 0.
  int local_master_pid();
  /// The run's directory (doorbells, fatal-signal reports), known after the handshake.
  const std::string& run_directory() const { return run_directory_; }

  // ---- MessageSink ----
  void on_message(Link& link, bridge::Received& message) override;
  void on_peers_failed(Link& link, const std::vector<int>& ranks) override;
  void after_receiving(Clock::time_point now, bool tick) override;
  void while_held(Clock::time_point) override {}
  bool rung_by_peers() const override { return master_bell_pid_.load() != 0; }

 private:
  void handle_locked(bridge::Received& message);
  /// Fills the handler table with the link's own kinds.
  void register_handlers();
  void check_master_alive();

  const Settings& settings_;
  ProgressEngine& engine_;
  /// The handlers of the master's messages: the link's own, and those serve() adds.
  wire::HandlerTable<> handlers_;
  Link& link_;
  const int master_rank_;
  const bool spawned_;
  const bool joined_;
  std::string host_;
  /// Stamped on every message (a getpid() per message is a system call).
  const uint32_t own_pid_ = static_cast<uint32_t>(::getpid());

  // Guarded by the engine's lock.
  int master_pid_ = 0;
  bool master_local_ = false;
  bool shutdown_received_ = false;  ///< The master told this worker to leave.
  bool master_gone_seen_ = false;   ///< A liveness check found the master's pid gone.
  std::string run_directory_;
  std::chrono::milliseconds heartbeat_interval_{0};  ///< Told by the master at welcome.
  Clock::time_point next_heartbeat_{};
  enum class Handshake { kWaiting, kAccepted, kRefused } handshake_ = Handshake::kWaiting;
  std::string refusal_;
  std::deque<bridge::Received> mailbox_;
  uint64_t assigned_process_ = 0;  ///< The process of the last kRun received.
  uint64_t next_request_ = 1;
  std::unordered_map<uint64_t, std::optional<wire::Reply>> replies_;
  uint64_t messages_received_ = 0;  ///< Messages from the master so far (the next one's number).
  bool leave_sent_ = false;
  /// Fault injection (FIBER_FAULT_DROP_MESSAGE=<n>@<file>): the one worker that creates <file>
  /// discards the n-th message from its master, as a faulty transport would.
  uint64_t fault_drop_message_ = 0;
  uint64_t messages_seen_ = 0;

  std::atomic<int> master_bell_pid_{0};  ///< The master's pid once it can be rung.
  std::mutex send_order_mu_;             ///< Numbers and posts each send as one step.
  uint64_t messages_sent_ = 0;
  bool last_word_sent_ = false;
};

}  // namespace fiber::internal
