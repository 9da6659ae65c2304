#include "fiber/manager/manager_hub.h"

#include <algorithm>

#include "fiber/errors.h"
#include "fiber/function_ref.h"

namespace fiber::internal {

namespace {

std::string as_key(std::span<const std::byte> bytes) {
  return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

std::vector<std::byte> rest_of(serial::Reader& reader) {
  const auto rest = reader.read_span(reader.remaining());
  return {rest.begin(), rest.end()};
}

void write_sized(serial::Writer& writer, std::span<const std::byte> bytes) {
  writer.write_size(bytes.size());
  writer.write_bytes(bytes.data(), bytes.size());
}

std::string index_problem(const char* what, uint64_t index, size_t size) {
  return std::string("List::") + what + ": index " + std::to_string(index) +
         " is out of range (the list has " + std::to_string(size) + " items)";
}

[[noreturn]] void wrong_op(detail::ObjectOp op, const char* type) {
  throw ProtocolError("operation " + std::to_string(static_cast<uint32_t>(op)) +
                      " is not one of a " + type);
}

}  // namespace

ManagerHub::ManagerHub(Log log) : log_(std::move(log)) {}

uint64_t ManagerHub::create(detail::ObjectType type, std::span<const std::byte> payload) {
  serial::Reader reader(payload);
  Object object;
  switch (type) {
    case detail::ObjectType::kDict:
      object = Dict{};
      break;
    case detail::ObjectType::kList:
      object = List{};
      break;
    case detail::ObjectType::kValue:
      object = Value{rest_of(reader)};
      break;
    case detail::ObjectType::kLock:
      object = Lock{};
      break;
    case detail::ObjectType::kEvent:
      object = Event{};
      break;
    case detail::ObjectType::kBarrier: {
      Barrier barrier;
      barrier.parties = serial::read<uint64_t>(reader);
      if (barrier.parties == 0) throw UsageError("Manager::barrier: parties must be at least 1");
      object = std::move(barrier);
      break;
    }
    case detail::ObjectType::kSemaphore: {
      Semaphore semaphore;
      semaphore.value = serial::read<uint64_t>(reader);
      semaphore.bound = serial::read<uint64_t>(reader);
      if (semaphore.value > semaphore.bound)
        throw UsageError("Semaphore: the initial value " + std::to_string(semaphore.value) +
                         " is above the bound " + std::to_string(semaphore.bound));
      object = std::move(semaphore);
      break;
    }
    case detail::ObjectType::kCondition:
      object = Condition{};
      break;
    default:
      throw ProtocolError("the manager hub does not keep objects of type " +
                          std::to_string(static_cast<uint32_t>(type)));
  }
  const uint64_t id = next_id_++;
  objects_.emplace(id, std::move(object));
  return id;
}

void ManagerHub::call(uint64_t object_id, detail::ObjectOp op, uint64_t requester,
                      const std::string& who, std::span<const std::byte> args,
                      std::optional<Clock::time_point> deadline, Completion done) {
  auto found = objects_.find(object_id);
  if (found == objects_.end())
    throw ProtocolError("unknown shared object id " + std::to_string(object_id));
  serial::Reader reader(args);
  std::visit(
      [&](auto& object) {
        using T = std::decay_t<decltype(object)>;
        if constexpr (std::is_same_v<T, Dict>) {
          call_dict(object, op, reader, done);
        } else if constexpr (std::is_same_v<T, List>) {
          call_list(object, op, reader, done);
        } else if constexpr (std::is_same_v<T, Value>) {
          call_value(object, op, reader, done);
        } else {
          Waiter waiter{requester, who, deadline, std::move(done), false};
          if constexpr (std::is_same_v<T, Lock>) {
            call_lock(object_id, object, op, std::move(waiter));
          } else if constexpr (std::is_same_v<T, Event>) {
            call_event(object, op, reader, std::move(waiter));
          } else if constexpr (std::is_same_v<T, Semaphore>) {
            call_semaphore(object_id, object, op, reader, std::move(waiter));
          } else if constexpr (std::is_same_v<T, Condition>) {
            call_condition(object_id, object, op, reader, std::move(waiter));
          } else {
            call_barrier(object_id, object, op, reader, std::move(waiter));
          }
        }
      },
      found->second);
}

void ManagerHub::call_dict(Dict& dict, detail::ObjectOp op, serial::Reader& args,
                           const Completion& done) {
  switch (op) {
    case detail::ObjectOp::kDictSet: {
      std::string key = as_key(args.read_span(args.read_size()));
      Bytes value = rest_of(args);
      if (auto it = dict.index.find(key); it != dict.index.end()) {
        it->second->second = std::move(value);
      } else {
        dict.entries.emplace_back(key, std::move(value));
        dict.index.emplace(std::move(key), std::prev(dict.entries.end()));
      }
      return done(ObjectResult::item());
    }
    case detail::ObjectOp::kDictGet: {
      auto it = dict.index.find(as_key(args.read_span(args.remaining())));
      if (it == dict.index.end()) return done(ObjectResult::number(0));
      return done(ObjectResult::item(it->second->second));
    }
    case detail::ObjectOp::kDictContains:
      return done(ObjectResult::number(dict.index.count(as_key(args.read_span(args.remaining())))));
    case detail::ObjectOp::kDictErase: {
      auto it = dict.index.find(as_key(args.read_span(args.remaining())));
      if (it == dict.index.end()) return done(ObjectResult::number(0));
      dict.entries.erase(it->second);
      dict.index.erase(it);
      return done(ObjectResult::number(1));
    }
    case detail::ObjectOp::kDictSize:
      return done(ObjectResult::number(dict.entries.size()));
    case detail::ObjectOp::kDictItems: {
      serial::Writer out;
      out.write_size(dict.entries.size());
      for (const auto& [key, value] : dict.entries) {
        write_sized(out, std::as_bytes(std::span(key.data(), key.size())));
        write_sized(out, value);
      }
      return done(ObjectResult::item(out.take()));
    }
    case detail::ObjectOp::kDictClear:
      dict.entries.clear();
      dict.index.clear();
      return done(ObjectResult::item());
    default:
      wrong_op(op, "Dict");
  }
}

void ManagerHub::call_list(List& list, detail::ObjectOp op, serial::Reader& args,
                           const Completion& done) {
  switch (op) {
    case detail::ObjectOp::kListAppend:
      list.items.push_back(rest_of(args));
      return done(ObjectResult::item());
    case detail::ObjectOp::kListGet: {
      const auto index = serial::read<uint64_t>(args);
      if (index >= list.items.size())
        return done(
            ObjectResult::error(Failure::kUsage, index_problem("get", index, list.items.size())));
      return done(ObjectResult::item(list.items[index]));
    }
    case detail::ObjectOp::kListSet: {
      const auto index = serial::read<uint64_t>(args);
      if (index >= list.items.size())
        return done(
            ObjectResult::error(Failure::kUsage, index_problem("set", index, list.items.size())));
      list.items[index] = rest_of(args);
      return done(ObjectResult::item());
    }
    case detail::ObjectOp::kListSize:
      return done(ObjectResult::number(list.items.size()));
    case detail::ObjectOp::kListValues: {
      serial::Writer out;
      out.write_size(list.items.size());
      for (const auto& item : list.items) write_sized(out, item);
      return done(ObjectResult::item(out.take()));
    }
    case detail::ObjectOp::kListClear:
      list.items.clear();
      return done(ObjectResult::item());
    default:
      wrong_op(op, "List");
  }
}

void ManagerHub::call_value(Value& value, detail::ObjectOp op, serial::Reader& args,
                            const Completion& done) {
  switch (op) {
    case detail::ObjectOp::kValueGet:
      return done(ObjectResult::item(value.bytes));
    case detail::ObjectOp::kValueSet:
      value.bytes = rest_of(args);
      return done(ObjectResult::item());
    case detail::ObjectOp::kValueApply: {
      detail::FunctionRef ref;
      ref.module_id = serial::read<uint64_t>(args);
      ref.offset = serial::read<uint64_t>(args);
      auto update = reinterpret_cast<ValueUpdater>(detail::ModuleTable::instance().decode(ref));
      Bytes old = value.bytes;
      try {
        update(value.bytes, args);
      } catch (...) {
        value.bytes = std::move(old);  // an update that fails changes nothing
        throw;
      }
      return done(ObjectResult::item(std::move(old)));
    }
    default:
      wrong_op(op, "Value");
  }
}

void ManagerHub::grant_next(Lock& lock) {
  if (lock.holder || lock.waiters.empty()) return;
  Waiter next = std::move(lock.waiters.front());
  lock.waiters.pop_front();
  lock.holder = next.requester;
  lock.holder_name = next.who;
  next.done(ObjectResult::item());
}

void ManagerHub::call_lock(uint64_t id, Lock& lock, detail::ObjectOp op, Waiter waiter) {
  switch (op) {
    case detail::ObjectOp::kLockAcquire:
      if (!lock.holder && lock.waiters.empty()) {
        lock.holder = waiter.requester;
        lock.holder_name = waiter.who;
        return waiter.done(ObjectResult::item());
      }
      if (waiter.deadline && *waiter.deadline <= Clock::now())
        return waiter.done({Outcome::kTimeout, 0, {}, {}, {}});
      lock.waiters.push_back(std::move(waiter));
      return;
    case detail::ObjectOp::kLockRelease:
      if (!lock.holder)
        return waiter.done(ObjectResult::error(
            Failure::kUsage, "Lock::release: lock " + std::to_string(id) + " is not held"));
      lock.holder.reset();
      lock.holder_name.clear();
      waiter.done(ObjectResult::item());
      return grant_next(lock);
    case detail::ObjectOp::kLockHeld:
      return waiter.done(ObjectResult::number(lock.holder ? 1 : 0));
    default:
      wrong_op(op, "Lock");
  }
}

void ManagerHub::call_event(Event& event, detail::ObjectOp op, serial::Reader& args,
                            Waiter waiter) {
  switch (op) {
    case detail::ObjectOp::kEventSet: {
      event.set = true;
      ++event.generation;
      auto waiters = std::exchange(event.waiters, {});
      waiter.done(ObjectResult::item());
      for (auto& w : waiters) w.done(ObjectResult::item());
      return;
    }
    case detail::ObjectOp::kEventClear:
      event.set = false;
      return waiter.done(ObjectResult::item());
    case detail::ObjectOp::kEventIsSet:
      return waiter.done(ObjectResult::number(event.set ? 1 : 0));
    case detail::ObjectOp::kEventState:
      return waiter.done(ObjectResult::number(event.generation * 2 + (event.set ? 1 : 0)));
    case detail::ObjectOp::kEventWait:
      if (event.set) return waiter.done(ObjectResult::item());
      if (args.remaining() != 0 && serial::read<uint64_t>(args) != event.generation)
        return waiter.done(ObjectResult::item());
      if (waiter.deadline && *waiter.deadline <= Clock::now())
        return waiter.done({Outcome::kTimeout, 0, {}, {}, {}});
      event.waiters.push_back(std::move(waiter));
      return;
    default:
      wrong_op(op, "Event");
  }
}

void ManagerHub::call_semaphore(uint64_t id, Semaphore& semaphore, detail::ObjectOp op,
                                serial::Reader& args, Waiter waiter) {
  switch (op) {
    case detail::ObjectOp::kSemaphoreAcquire:
      if (semaphore.value > 0 && semaphore.waiters.empty()) {
        --semaphore.value;
        return waiter.done(ObjectResult::item());
      }
      if (waiter.deadline && *waiter.deadline <= Clock::now())
        return waiter.done({Outcome::kTimeout, 0, {}, {}, {}});
      semaphore.waiters.push_back(std::move(waiter));
      return;
    case detail::ObjectOp::kSemaphoreRelease: {
      const auto count = serial::read<uint64_t>(args);
      if (count > semaphore.bound - semaphore.value)
        return waiter.done(
            ObjectResult::error(Failure::kUsage, "semaphore " + std::to_string(id) +
                                                     " released too many times (its bound is " +
                                                     std::to_string(semaphore.bound) + ")"));
      semaphore.value += count;
      waiter.done(ObjectResult::item());
      while (semaphore.value > 0 && !semaphore.waiters.empty()) {
        Waiter next = std::move(semaphore.waiters.front());
        semaphore.waiters.pop_front();
        --semaphore.value;
        next.done(ObjectResult::item());
      }
      return;
    }
    case detail::ObjectOp::kSemaphoreValue:
      return waiter.done(ObjectResult::number(semaphore.value));
    default:
      wrong_op(op, "Semaphore");
  }
}

void ManagerHub::call_condition(uint64_t id, Condition& condition, detail::ObjectOp op,
                                serial::Reader& args, Waiter waiter) {
  switch (op) {
    case detail::ObjectOp::kConditionEnqueue: {
      const uint64_t ticket = condition.next_ticket++;
      condition.queued.push_back({ticket, waiter.requester});
      return waiter.done(ObjectResult::number(ticket));
    }
    case detail::ObjectOp::kConditionWait: {
      const auto ticket = serial::read<uint64_t>(args);
      if (args.remaining() != 0) waiter.slice = serial::read<uint8_t>(args) != 0;
      if (condition.notified.erase(ticket) != 0) return waiter.done(ObjectResult::item());
      const auto queued =
          std::find_if(condition.queued.begin(), condition.queued.end(),
                       [ticket](const Condition::Ticket& t) { return t.number == ticket; });
      if (queued == condition.queued.end() || condition.waiting.count(ticket) != 0)
        return waiter.done(ObjectResult::error(
            Failure::kUsage, "condition " + std::to_string(id) + ": ticket " +
                                 std::to_string(ticket) + " is not one waiting to be notified"));
      if (waiter.deadline && *waiter.deadline <= Clock::now()) {
        if (!waiter.slice) condition.queued.erase(queued);
        return waiter.done({Outcome::kTimeout, 0, {}, {}, {}});
      }
      condition.waiting.emplace(ticket, std::move(waiter));
      return;
    }
    case detail::ObjectOp::kConditionNotify: {
      const auto count = serial::read<uint64_t>(args);
      uint64_t woken = 0;
      while (woken < count && !condition.queued.empty()) {
        const Condition::Ticket ticket = condition.queued.front();
        condition.queued.pop_front();
        ++woken;
        if (auto waiting = condition.waiting.find(ticket.number);
            waiting != condition.waiting.end()) {
          Waiter woken_waiter = std::move(waiting->second);
          condition.waiting.erase(waiting);
          woken_waiter.done(ObjectResult::item());
        } else {
          condition.notified.emplace(ticket.number, ticket.requester);
        }
      }
      return waiter.done(ObjectResult::number(woken));
    }
    case detail::ObjectOp::kConditionWaiting:
      return waiter.done(ObjectResult::number(condition.queued.size()));
    default:
      wrong_op(op, "Condition");
  }
}

void ManagerHub::break_barrier(uint64_t id, Barrier& barrier, const std::string& why) {
  barrier.broken = true;
  barrier.broken_why = "barrier " + std::to_string(id) + " is broken: " + why;
  for (auto& waiter : std::exchange(barrier.waiting, {}))
    waiter.done(ObjectResult::error(Failure::kBrokenBarrier, barrier.broken_why));
}

void ManagerHub::call_barrier(uint64_t id, Barrier& barrier, detail::ObjectOp op,
                              serial::Reader& args, Waiter waiter) {
  switch (op) {
    case detail::ObjectOp::kBarrierWait: {
      if (args.remaining() != 0) waiter.slice = serial::read<uint8_t>(args) != 0;
      barrier.between_slices.erase(waiter.requester);
      if (barrier.broken)
        return waiter.done(ObjectResult::error(Failure::kBrokenBarrier, barrier.broken_why));
      const uint64_t index = barrier.waiting.size();
      if (index + 1 == barrier.parties) {
        // The last party: everybody passes, each with its arrival index.
        auto waiting = std::exchange(barrier.waiting, {});
        barrier.between_slices.clear();
        for (size_t i = 0; i < waiting.size(); ++i) waiting[i].done(ObjectResult::number(i));
        return waiter.done(ObjectResult::number(index));
      }
      if (waiter.deadline && *waiter.deadline <= Clock::now()) {
        if (waiter.slice) {
          barrier.between_slices.insert(waiter.requester);
          return waiter.done({Outcome::kTimeout, 0, {}, {}, {}});
        }
        const std::string who = waiter.who;
        waiter.done(ObjectResult::error(
            Failure::kBrokenBarrier,
            "barrier " + std::to_string(id) + " is broken: " + who + " timed out waiting"));
        return break_barrier(id, barrier, who + " timed out waiting");
      }
      barrier.waiting.push_back(std::move(waiter));
      return;
    }
    case detail::ObjectOp::kBarrierReset:
      if (!barrier.waiting.empty()) break_barrier(id, barrier, "it was reset while parties waited");
      barrier.broken = false;
      barrier.broken_why.clear();
      barrier.between_slices.clear();
      return waiter.done(ObjectResult::item());
    case detail::ObjectOp::kBarrierAbort:
      break_barrier(id, barrier, "it was aborted by " + waiter.who);
      return waiter.done(ObjectResult::item());
    case detail::ObjectOp::kBarrierWaiting:
      return waiter.done(ObjectResult::number(barrier.waiting.size()));
    case detail::ObjectOp::kBarrierBroken:
      return waiter.done(ObjectResult::number(barrier.broken ? 1 : 0));
    default:
      wrong_op(op, "Barrier");
  }
}

void ManagerHub::process_ended(uint64_t process, const std::string& how) {
  auto own = [process](const Waiter& waiter) { return waiter.requester == process; };
  for (auto& [id, object] : objects_) {
    if (auto* lock = std::get_if<Lock>(&object)) {
      std::erase_if(lock->waiters, own);
      if (lock->holder == process) {
        log_("lock " + std::to_string(id) + " is released: its holder ended (" + how + ")");
        lock->holder.reset();
        lock->holder_name.clear();
        grant_next(*lock);
      }
    } else if (auto* event = std::get_if<Event>(&object)) {
      std::erase_if(event->waiters, own);
    } else if (auto* semaphore = std::get_if<Semaphore>(&object)) {
      std::erase_if(semaphore->waiters, own);
    } else if (auto* condition = std::get_if<Condition>(&object)) {
      std::erase_if(condition->queued, [process](const Condition::Ticket& ticket) {
        return ticket.requester == process;
      });
      std::erase_if(condition->notified,
                    [process](const auto& entry) { return entry.second == process; });
      std::erase_if(condition->waiting,
                    [process](const auto& entry) { return entry.second.requester == process; });
    } else if (auto* barrier = std::get_if<Barrier>(&object)) {
      const bool was_between = barrier->between_slices.erase(process) != 0;
      if (!was_between && std::none_of(barrier->waiting.begin(), barrier->waiting.end(), own))
        continue;
      std::erase_if(barrier->waiting, own);
      break_barrier(id, *barrier, "a party waiting at it ended (" + how + ")");
    }
  }
}

std::optional<ManagerHub::Clock::time_point> ManagerHub::expire(Clock::time_point now) {
  std::optional<Clock::time_point> next;
  auto note = [&next](const Waiter& waiter) {
    if (waiter.deadline && (!next || *waiter.deadline < *next)) next = waiter.deadline;
  };
  auto due = [now](const Waiter& waiter) { return waiter.deadline && *waiter.deadline <= now; };
  auto time_out = [&](std::deque<Waiter>& waiters) {
    for (auto it = waiters.begin(); it != waiters.end();) {
      if (due(*it)) {
        Waiter waiter = std::move(*it);
        it = waiters.erase(it);
        waiter.done({Outcome::kTimeout, 0, {}, {}, {}});
      } else {
        note(*it);
        ++it;
      }
    }
  };
  for (auto& [id, object] : objects_) {
    if (auto* lock = std::get_if<Lock>(&object)) {
      time_out(lock->waiters);
    } else if (auto* event = std::get_if<Event>(&object)) {
      time_out(event->waiters);
    } else if (auto* semaphore = std::get_if<Semaphore>(&object)) {
      time_out(semaphore->waiters);
    } else if (auto* condition = std::get_if<Condition>(&object)) {
      for (auto it = condition->waiting.begin(); it != condition->waiting.end();) {
        if (due(it->second)) {
          const uint64_t ticket = it->first;
          Waiter waiter = std::move(it->second);
          it = condition->waiting.erase(it);
          // A ticket that timed out is no longer counted by notify (one slice's still is).
          if (!waiter.slice)
            std::erase_if(condition->queued,
                          [ticket](const Condition::Ticket& t) { return t.number == ticket; });
          waiter.done({Outcome::kTimeout, 0, {}, {}, {}});
        } else {
          note(it->second);
          ++it;
        }
      }
    } else if (auto* barrier = std::get_if<Barrier>(&object)) {
      // A slice that ends withdraws its party; it comes back for the next slice.
      for (auto it = barrier->waiting.begin(); it != barrier->waiting.end();) {
        if (it->slice && due(*it)) {
          barrier->between_slices.insert(it->requester);
          Waiter waiter = std::move(*it);
          it = barrier->waiting.erase(it);
          waiter.done({Outcome::kTimeout, 0, {}, {}, {}});
        } else {
          ++it;
        }
      }
      auto late = std::find_if(barrier->waiting.begin(), barrier->waiting.end(), due);
      if (late != barrier->waiting.end()) {
        // Python's rule: a wait that times out breaks the barrier, for itself and the others.
        const std::string why = late->who + " timed out waiting";
        break_barrier(id, *barrier, why);
      } else {
        for (const auto& waiter : barrier->waiting) note(waiter);
      }
    }
  }
  return next;
}

}  // namespace fiber::internal
