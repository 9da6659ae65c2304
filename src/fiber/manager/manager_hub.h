// The store behind every fiber::Manager: the shared objects (Dict, List, Value, Lock, Event,
// Barrier, Semaphore, Condition) as bytes, each operation atomic, the waits of locks, events and
// barriers with their deadlines, and what a process's end releases. It lives in the master; objects
// of users' classes are kept by the manager service (manager_service.h), which only takes their ids
// here.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <variant>
#include <vector>

#include "fiber/manager/manager_access.h"
#include "fiber/manager/manager_messages.h"
#include "fiber/serialization.h"
#include "fiber/wire/message_kind.h"

namespace fiber::internal {

/// Updates a Value's bytes in place with an argument (Value::fetch_add's addition), in the master.
using ValueUpdater = void (*)(std::vector<std::byte>& value, serial::Reader& argument);

/// Not thread-safe: the runtime calls it under its own lock.
class ManagerHub {
 public:
  using Clock = std::chrono::steady_clock;
  using Bytes = std::vector<std::byte>;
  /// Called once per operation with its outcome, at once or when its wait ends.
  using Completion = std::function<void(ObjectResult)>;
  /// Says what the hub did on its own (a lock released because its holder ended).
  using Log = std::function<void(const std::string& line)>;

  explicit ManagerHub(Log log);

  /// A new object; throws UsageError for a barrier of no parties, ProtocolError for a type the
  /// hub does not keep (kHosted) or a malformed payload.
  uint64_t create(detail::ObjectType type, std::span<const std::byte> payload);
  /// An id for an object kept elsewhere (a user's class).
  uint64_t reserve_id() { return next_id_++; }
  bool exists(uint64_t object) const { return objects_.count(object) != 0; }

  /// Runs `op` on `object` for process `requester` (`who` names it in messages); `done` gets the
  /// outcome now or, for a wait, when it ends (`deadline` empty = no limit). Throws
  /// ProtocolError for an unknown object, an operation of another type or malformed arguments.
  void call(uint64_t object, detail::ObjectOp op, uint64_t requester, const std::string& who,
            std::span<const std::byte> args, std::optional<Clock::time_point> deadline,
            Completion done);

  /// `process` ended (`how` says how): its locks are released, the barriers it waited at break,
  /// and its own waits are dropped (nobody is left to answer).
  void process_ended(uint64_t process, const std::string& how);
  /// Completes waits whose deadline passed; returns the next deadline, if any.
  std::optional<Clock::time_point> expire(Clock::time_point now);

 private:
  struct Waiter {
    uint64_t requester = 0;
    std::string who;
    std::optional<Clock::time_point> deadline;
    Completion done;
    /// One slice of a longer wait (a front end that checks for signals between slices): its
    /// timeout neither breaks a barrier nor gives up a condition's ticket.
    bool slice = false;
  };
  struct Dict {
    std::list<std::pair<std::string, Bytes>> entries;  ///< In insertion order, as Python's.
    std::unordered_map<std::string, std::list<std::pair<std::string, Bytes>>::iterator> index;
  };
  struct List {
    std::vector<Bytes> items;
  };
  struct Value {
    Bytes bytes;
  };
  struct Lock {
    std::optional<uint64_t> holder;
    std::string holder_name;
    std::deque<Waiter> waiters;
  };
  struct Event {
    bool set = false;
    uint64_t generation = 0;  ///< How many times it was set: a waiter between slices sees a
                              ///< set() that a clear() undid before it came back.
    std::deque<Waiter> waiters;
  };
  struct Barrier {
    uint64_t parties = 0;
    bool broken = false;
    std::string broken_why;
    std::vector<Waiter> waiting;
    /// Parties whose slice of a wait ended and who are expected back: one that ends before it
    /// comes back breaks the barrier as a waiting one does.
    std::unordered_set<uint64_t> between_slices;
  };
  struct Semaphore {
    uint64_t value = 0;
    uint64_t bound = detail::kUnbounded;
    std::deque<Waiter> waiters;
  };
  /// Tickets in the order they were taken; a notify wakes the oldest. A ticket notified before
  /// its holder waits is remembered, so the notify between unlocking and waiting is not lost.
  struct Condition {
    struct Ticket {
      uint64_t number = 0;
      uint64_t requester = 0;
    };
    uint64_t next_ticket = 1;
    std::deque<Ticket> queued;                        ///< Not yet notified.
    std::unordered_map<uint64_t, uint64_t> notified;  ///< ticket -> its requester
    std::unordered_map<uint64_t, Waiter> waiting;     ///< ticket -> its wait
  };
  using Object = std::variant<Dict, List, Value, Lock, Event, Barrier, Semaphore, Condition>;

  void call_dict(Dict& dict, detail::ObjectOp op, serial::Reader& args, const Completion& done);
  void call_list(List& list, detail::ObjectOp op, serial::Reader& args, const Completion& done);
  void call_value(Value& value, detail::ObjectOp op, serial::Reader& args, const Completion& done);
  void call_lock(uint64_t id, Lock& lock, detail::ObjectOp op, Waiter waiter);
  void call_event(Event& event, detail::ObjectOp op, serial::Reader& args, Waiter waiter);
  void call_barrier(uint64_t id, Barrier& barrier, detail::ObjectOp op, serial::Reader& args,
                    Waiter waiter);
  void call_semaphore(uint64_t id, Semaphore& semaphore, detail::ObjectOp op, serial::Reader& args,
                      Waiter waiter);
  void call_condition(uint64_t id, Condition& condition, detail::ObjectOp op, serial::Reader& args,
                      Waiter waiter);
  void break_barrier(uint64_t id, Barrier& barrier, const std::string& why);
  void grant_next(Lock& lock);

  Log log_;
  uint64_t next_id_ = 1;
  std::unordered_map<uint64_t, Object> objects_;
};

}  // namespace fiber::internal
