// What the templates of fiber/manager.h share with the runtime: the kinds of shared object, the
// operations on them, and the untyped handle that sends an operation to wherever the object
// lives. Support for the public headers, not for direct use.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace fiber::detail {

/// The kinds of shared object a Manager serves.
enum class ObjectType : uint32_t {
  kDict = 1,
  kList = 2,
  kValue = 3,  ///< payload: the initial value's bytes
  kLock = 4,
  kEvent = 5,
  kBarrier = 6,    ///< payload: the number of parties (uint64)
  kHosted = 7,     ///< an object of a user's class; payload: its factory (manager_service.h)
  kSemaphore = 8,  ///< payload: the initial value, then the bound (uint64 each; kUnbounded: none)
  kCondition = 9,  ///< a condition variable's waiting list (the lock is the caller's own Lock)
};

/// The operations on shared objects. Arguments and answers (manager/manager_hub.cc answers them):
/// keys and items are the bytes of their encoded values.
enum class ObjectOp : uint32_t {
  kDictSet = 1,   ///< key (size-prefixed), value
  kDictGet,       ///< key -> kItem value, or kValue 0 when absent
  kDictContains,  ///< key -> kValue 0/1
  kDictErase,     ///< key -> kValue 0/1 (whether it was there)
  kDictSize,      ///< -> kValue
  kDictItems,     ///< -> kItem: count, then (key, value) pairs, each size-prefixed
  kDictClear,
  kListAppend = 20,  ///< item
  kListGet,          ///< index (uint64) -> kItem
  kListSet,          ///< index, item
  kListSize,         ///< -> kValue
  kListValues,       ///< -> kItem: count, then items, each size-prefixed
  kListClear,
  kValueGet = 40,     ///< -> kItem
  kValueSet,          ///< item
  kValueApply,        ///< FunctionRef of an updater (ValueUpdater), its argument -> kItem old value
  kLockAcquire = 60,  ///< waits -> kItem acquired, kTimeout
  kLockRelease,       ///< kUsage when not held
  kLockHeld,          ///< -> kValue 0/1
  kEventSet = 80,
  kEventClear,
  kEventIsSet,         ///< -> kValue 0/1
  kEventWait,          ///< [generation (uint64)]; waits -> kItem set (or set since that
                       ///< generation, though cleared again), kTimeout
  kEventState,         ///< -> kValue generation * 2 + (1 if set): what a sliced wait starts from
  kBarrierWait = 100,  ///< [slice (uint8)]; waits -> kValue arrival index; kBrokenBarrier (a
                       ///< timeout breaks it, but that of a slice withdraws the party: kTimeout)
  kBarrierReset,
  kBarrierAbort,
  kBarrierWaiting,          ///< -> kValue parties waiting now
  kBarrierBroken,           ///< -> kValue 0/1
  kHostedCall = 120,        ///< FunctionRef of the invoker (HostedInvoker), its arguments -> kItem
  kSemaphoreAcquire = 140,  ///< waits -> kItem acquired, kTimeout
  kSemaphoreRelease,        ///< count (uint64); kUsage when it would pass the bound
  kSemaphoreValue,          ///< -> kValue
  kConditionEnqueue = 160,  ///< -> kValue a ticket: the caller will wait (before it unlocks)
  kConditionWait,           ///< ticket (uint64), [slice (uint8)]; waits -> kItem notified,
                            ///< kTimeout (a slice's timeout keeps the ticket)
  kConditionNotify,         ///< count (uint64): wakes that many tickets, oldest first -> kValue
  kConditionWaiting,        ///< -> kValue tickets not yet notified
};

/// A semaphore's bound that is none.
inline constexpr uint64_t kUnbounded = ~uint64_t{0};

/// What an operation answered: nothing or bytes (an item), a number, or a timeout.
struct ObjectAnswer {
  bool timed_out = false;
  bool is_number = false;
  uint64_t number = 0;
  std::vector<std::byte> bytes;
};

/// A shared object of a Manager, by id.
class ObjectRef {
 public:
  ObjectRef() = default;
  explicit ObjectRef(uint64_t id) : id_(id) {}
  /// Makes an object (asks the master when called in a worker).
  static ObjectRef create(ObjectType type, std::vector<std::byte> payload);

  /// Runs `op`, waiting at most `timeout` where it waits. Failures throw: UsageError (a misuse,
  /// e.g. an index out of range), BrokenBarrierError, RemoteError (a user's member function
  /// threw), ProtocolError; `what` names the call in their messages.
  ObjectAnswer call(ObjectOp op, std::vector<std::byte> args, const char* what,
                    std::optional<std::chrono::microseconds> timeout = std::nullopt) const;

  uint64_t id() const noexcept { return id_; }
  bool valid() const noexcept { return id_ != 0; }

 private:
  uint64_t id_ = 0;
};

}  // namespace fiber::detail
