// fiber::Manager and its shared objects: Dict, List, Value, Lock, Event, Barrier and proxies of
// users' classes, like multiprocessing's SyncManager.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "fiber/detail/object_ref.h"
#include "fiber/errors.h"
#include "fiber/function_ref.h"
#include "fiber/serialization.h"

namespace fiber {

namespace detail {

inline std::chrono::microseconds as_micros(auto timeout) {
  return std::chrono::duration_cast<std::chrono::microseconds>(timeout);
}

/// The reference of a function of this binary (cached per function: encoding it looks the
/// module up).
template <auto Function>
const FunctionRef& code_ref() {
  static const FunctionRef ref =
      ModuleTable::instance().encode(reinterpret_cast<const void*>(Function));
  return ref;
}

inline void save_ref(serial::Writer& writer, const FunctionRef& ref) {
  serial::save(writer, ref.module_id);
  serial::save(writer, ref.offset);
}

/// Key and value of a Dict entry, as the hub reads them: the key size-prefixed, then the value.
template <class K>
void save_key(serial::Writer& writer, const K& key) {
  const auto bytes = serial::to_bytes(key);
  writer.write_size(bytes.size());
  writer.write_bytes(bytes.data(), bytes.size());
}

template <class T>
T read_sized(serial::Reader& reader) {
  return serial::from_bytes<T>(reader.read_span(reader.read_size()));
}

/// Value::fetch_add's update, run in the master on the stored bytes.
template <class T>
void add_to_value(std::vector<std::byte>& value, serial::Reader& argument) {
  const T current = serial::from_bytes<T>(value);
  const T delta = serial::read<T>(argument);
  value = serial::to_bytes(static_cast<T>(current + delta));
}

/// What a member function pointer takes and returns.
template <class M>
struct MemberTraits;
template <class C, class R, class... P>
struct MemberTraits<R (C::*)(P...)> {
  using Class = C;
  using Result = R;
  using Args = std::tuple<std::decay_t<P>...>;
};
template <class C, class R, class... P>
struct MemberTraits<R (C::*)(P...) const> : MemberTraits<R (C::*)(P...)> {};
template <class C, class R, class... P>
struct MemberTraits<R (C::*)(P...) noexcept> : MemberTraits<R (C::*)(P...)> {};
template <class C, class R, class... P>
struct MemberTraits<R (C::*)(P...) const noexcept> : MemberTraits<R (C::*)(P...)> {};

// Member functions travel by reference, like functions: a non-virtual one as the reference of its
// code, a virtual one as its vtable slot (the same in every process of one binary). The layout is
// the Itanium C++ ABI's (GCC and Clang on Linux): {pointer or 1 + vtable offset, this adjustment};
// on AArch64 the virtual flag is the adjustment's low bit instead.
#if defined(__x86_64__) || defined(__i386__)
inline constexpr bool kVirtualFlagInAdjustment = false;
#elif defined(__aarch64__) || defined(__arm__)
inline constexpr bool kVirtualFlagInAdjustment = true;
#else
#error "fiber::Proxy knows the member function pointer layout of x86 and ARM only"
#endif

template <class M>
void save_member(serial::Writer& writer, M member) {
  static_assert(sizeof(M) == 2 * sizeof(uintptr_t), "an Itanium C++ ABI member function pointer");
  uintptr_t parts[2];
  std::memcpy(parts, &member, sizeof parts);
  const bool is_virtual = kVirtualFlagInAdjustment ? (parts[1] & 1) != 0 : (parts[0] & 1) != 0;
  serial::save(writer, static_cast<uint8_t>(is_virtual));
  if (is_virtual) {
    serial::save(writer, static_cast<uint64_t>(parts[0]));
  } else {
    save_ref(writer, ModuleTable::instance().encode(reinterpret_cast<const void*>(parts[0])));
  }
  serial::save(writer, static_cast<uint64_t>(parts[1]));
}

template <class M>
M load_member(serial::Reader& reader) {
  uintptr_t parts[2];
  if (serial::read<uint8_t>(reader) != 0) {
    parts[0] = static_cast<uintptr_t>(serial::read<uint64_t>(reader));
  } else {
    FunctionRef ref;
    ref.module_id = serial::read<uint64_t>(reader);
    ref.offset = serial::read<uint64_t>(reader);
    parts[0] = reinterpret_cast<uintptr_t>(ModuleTable::instance().decode(ref));
  }
  parts[1] = static_cast<uintptr_t>(serial::read<uint64_t>(reader));
  M member;
  std::memcpy(&member, parts, sizeof member);
  return member;
}

/// Makes a C in the master from the encoded constructor arguments.
template <class C, class... A>
void* construct_hosted(serial::Reader& args) {
  auto values = serial::read<std::tuple<A...>>(args);
  return std::apply([](auto&&... a) { return static_cast<void*>(new C(std::move(a)...)); },
                    std::move(values));
}
template <class C>
void destroy_hosted(void* object) {
  delete static_cast<C*>(object);
}

/// Runs member function M (read from `args`) of a C in the master; writes its result.
template <class M>
void invoke_hosted(void* object, serial::Reader& args, serial::Writer& result) {
  using Traits = MemberTraits<M>;
  using C = typename Traits::Class;
  const M member = load_member<M>(args);
  auto values = serial::read<typename Traits::Args>(args);
  C& target = *static_cast<C*>(object);
  if constexpr (std::is_void_v<typename Traits::Result>) {
    std::apply([&](auto&&... a) { (target.*member)(std::move(a)...); }, std::move(values));
  } else {
    serial::save(result, std::apply([&](auto&&... a) { return (target.*member)(std::move(a)...); },
                                    std::move(values)));
  }
}

/// The id of a handle as its wire form: every copy in every process refers to one object.
#define FIBER_SHARED_HANDLE(Handle)                                                  \
  void fiber_save(serial::Writer& writer) const { serial::save(writer, ref_.id()); } \
  static Handle fiber_load(serial::Reader& reader) {                                 \
    return Handle(detail::ObjectRef(serial::read<uint64_t>(reader)));                \
  }                                                                                  \
  /** True when the handle refers to an object (a default-made one does not). */     \
  bool valid() const noexcept { return ref_.valid(); }                               \
                                                                                     \
 private:                                                                            \
  explicit Handle(detail::ObjectRef ref) : ref_(ref) {}                              \
  friend class fiber::Manager;                                                       \
  detail::ObjectRef ref_;                                                            \
                                                                                     \
 public:

}  // namespace detail

class Manager;

/// A dictionary shared by every process holding a copy of the handle, made by
/// Manager::dict<K, V>(). Each call is one atomic operation at the manager. Keys are compared by
/// their encoded bytes; items() lists entries in insertion order, as Python's dict does.
template <class K, class V>
class Dict {
 public:
  Dict() = default;
  /// Sets `key` to `value`.
  void set(const K& key, const V& value) const {
    serial::Writer args;
    detail::save_key(args, key);
    serial::save(args, value);
    ref_.call(detail::ObjectOp::kDictSet, args.take(), "Dict::set");
  }
  /// The value of `key`, or nothing.
  std::optional<V> get(const K& key) const {
    auto answer = ref_.call(detail::ObjectOp::kDictGet, serial::to_bytes(key), "Dict::get");
    if (answer.is_number) return std::nullopt;
    return serial::from_bytes<V>(answer.bytes);
  }
  /// The value of `key`, or `fallback`.
  V get(const K& key, const V& fallback) const { return get(key).value_or(fallback); }
  bool contains(const K& key) const {
    return ref_.call(detail::ObjectOp::kDictContains, serial::to_bytes(key), "Dict::contains")
               .number != 0;
  }
  /// Removes `key`; false when it was not there.
  bool erase(const K& key) const {
    return ref_.call(detail::ObjectOp::kDictErase, serial::to_bytes(key), "Dict::erase").number !=
           0;
  }
  size_t size() const {
    return static_cast<size_t>(ref_.call(detail::ObjectOp::kDictSize, {}, "Dict::size").number);
  }
  bool empty() const { return size() == 0; }
  /// Every entry, in insertion order (one snapshot).
  std::vector<std::pair<K, V>> items() const {
    auto answer = ref_.call(detail::ObjectOp::kDictItems, {}, "Dict::items");
    serial::Reader reader(answer.bytes);
    std::vector<std::pair<K, V>> items(reader.read_size(16));
    for (auto& [key, value] : items) {
      key = detail::read_sized<K>(reader);
      value = detail::read_sized<V>(reader);
    }
    return items;
  }
  std::vector<K> keys() const {
    std::vector<K> keys;
    for (auto& entry : items()) keys.push_back(std::move(entry.first));
    return keys;
  }
  void clear() const { ref_.call(detail::ObjectOp::kDictClear, {}, "Dict::clear"); }

  FIBER_SHARED_HANDLE(Dict)
};

/// A list shared by every process holding a copy of the handle, made by Manager::list<T>().
template <class T>
class List {
 public:
  List() = default;
  void append(const T& item) const {
    ref_.call(detail::ObjectOp::kListAppend, serial::to_bytes(item), "List::append");
  }
  /// The item at `index`; fiber::UsageError naming the index and the size when out of range.
  T get(size_t index) const {
    auto answer = ref_.call(detail::ObjectOp::kListGet,
                            serial::to_bytes(static_cast<uint64_t>(index)), "List::get");
    return serial::from_bytes<T>(answer.bytes);
  }
  /// Replaces the item at `index`; fiber::UsageError when out of range.
  void set(size_t index, const T& item) const {
    serial::Writer args;
    serial::save(args, static_cast<uint64_t>(index));
    serial::save(args, item);
    ref_.call(detail::ObjectOp::kListSet, args.take(), "List::set");
  }
  size_t size() const {
    return static_cast<size_t>(ref_.call(detail::ObjectOp::kListSize, {}, "List::size").number);
  }
  /// Every item, in order (one snapshot).
  std::vector<T> values() const {
    auto answer = ref_.call(detail::ObjectOp::kListValues, {}, "List::values");
    serial::Reader reader(answer.bytes);
    std::vector<T> values(reader.read_size(8));
    for (auto& value : values) value = detail::read_sized<T>(reader);
    return values;
  }
  void clear() const { ref_.call(detail::ObjectOp::kListClear, {}, "List::clear"); }

  FIBER_SHARED_HANDLE(List)
};

/// One value shared by every process holding a copy of the handle, made by
/// Manager::value<T>(initial).
template <class T>
class Value {
 public:
  Value() = default;
  T get() const {
    return serial::from_bytes<T>(ref_.call(detail::ObjectOp::kValueGet, {}, "Value::get").bytes);
  }
  void set(const T& value) const {
    ref_.call(detail::ObjectOp::kValueSet, serial::to_bytes(value), "Value::set");
  }
  /// Adds `delta` at the manager, atomically; returns the value before.
  T fetch_add(const T& delta) const requires requires(T a, T b) { static_cast<T>(a + b); }
  {
    serial::Writer args;
    detail::save_ref(args, detail::code_ref<&detail::add_to_value<T>>());
    serial::save(args, delta);
    return serial::from_bytes<T>(
        ref_.call(detail::ObjectOp::kValueApply, args.take(), "Value::fetch_add").bytes);
  }

  FIBER_SHARED_HANDLE(Value)
};

/// A lock shared by every process holding a copy of the handle, made by Manager::lock(). Not
/// recursive; any process may release it. A holder that ends (killed, or returning without
/// release) releases it: the next acquire succeeds, and the master logs whose it was. Meets the
/// Lockable requirements, so std::lock_guard and std::unique_lock work with it.
class Lock {
 public:
  Lock() = default;
  /// Waits until the lock is this caller's.
  void acquire() const { ref_.call(detail::ObjectOp::kLockAcquire, {}, "Lock::acquire"); }
  /// Waits at most `timeout`; false when the lock stayed held by another.
  template <class Rep, class Period>
  bool acquire(std::chrono::duration<Rep, Period> timeout) const {
    return !ref_.call(detail::ObjectOp::kLockAcquire, {}, "Lock::acquire",
                      detail::as_micros(timeout))
                .timed_out;
  }
  /// fiber::UsageError when the lock is not held.
  void release() const { ref_.call(detail::ObjectOp::kLockRelease, {}, "Lock::release"); }
  /// Whether some process holds it now.
  bool locked() const { return ref_.call(detail::ObjectOp::kLockHeld, {}, "Lock::locked").number; }
  void lock() const { acquire(); }
  void unlock() const { release(); }
  bool try_lock() const { return acquire(std::chrono::microseconds(0)); }

  FIBER_SHARED_HANDLE(Lock)
};

/// An event flag shared by every process holding a copy of the handle, made by
/// Manager::event().
class Event {
 public:
  Event() = default;
  /// Sets the flag and wakes every waiter.
  void set() const { ref_.call(detail::ObjectOp::kEventSet, {}, "Event::set"); }
  void clear() const { ref_.call(detail::ObjectOp::kEventClear, {}, "Event::clear"); }
  bool is_set() const {
    return ref_.call(detail::ObjectOp::kEventIsSet, {}, "Event::is_set").number != 0;
  }
  /// Waits until the flag is set.
  void wait() const { ref_.call(detail::ObjectOp::kEventWait, {}, "Event::wait"); }
  /// Waits at most `timeout`; false when the flag was not set by then.
  template <class Rep, class Period>
  bool wait(std::chrono::duration<Rep, Period> timeout) const {
    return !ref_.call(detail::ObjectOp::kEventWait, {}, "Event::wait", detail::as_micros(timeout))
                .timed_out;
  }

  FIBER_SHARED_HANDLE(Event)
};

/// A barrier for a fixed number of parties, shared by every process holding a copy of the
/// handle, made by Manager::barrier(parties). As Python's threading.Barrier: a wait that times
/// out, a party that ends while waiting, abort() and reset() while parties wait break it, and
/// every wait then throws fiber::BrokenBarrierError until reset().
class Barrier {
 public:
  Barrier() = default;
  /// Waits until `parties` processes wait; returns this one's arrival index (0 .. parties-1).
  size_t wait() const {
    return static_cast<size_t>(
        ref_.call(detail::ObjectOp::kBarrierWait, {}, "Barrier::wait").number);
  }
  /// Waits at most `timeout`; on timeout the barrier breaks (fiber::BrokenBarrierError).
  template <class Rep, class Period>
  size_t wait(std::chrono::duration<Rep, Period> timeout) const {
    return static_cast<size_t>(
        ref_.call(detail::ObjectOp::kBarrierWait, {}, "Barrier::wait", detail::as_micros(timeout))
            .number);
  }
  /// Back to the empty, unbroken state; parties waiting now get BrokenBarrierError.
  void reset() const { ref_.call(detail::ObjectOp::kBarrierReset, {}, "Barrier::reset"); }
  /// Breaks the barrier: waits now and later throw BrokenBarrierError until reset().
  void abort() const { ref_.call(detail::ObjectOp::kBarrierAbort, {}, "Barrier::abort"); }
  /// Parties waiting now.
  size_t n_waiting() const {
    return static_cast<size_t>(
        ref_.call(detail::ObjectOp::kBarrierWaiting, {}, "Barrier::n_waiting").number);
  }
  bool broken() const {
    return ref_.call(detail::ObjectOp::kBarrierBroken, {}, "Barrier::broken").number != 0;
  }

  FIBER_SHARED_HANDLE(Barrier)
};

/// An object of a user's class C kept by the manager (Manager::make<C>(args...)): member
/// functions called through the proxy run there, one at a time per object, on a thread of the
/// object's own (a slow one holds up no other object), and their results come back. Member
/// functions travel by reference, like functions; arguments and results are serialized.
template <class C>
class Proxy {
 public:
  Proxy() = default;
  /// Runs `member` on the object with `args`; a throw there is a fiber::RemoteError here.
  template <class M, class... Given>
  requires std::is_member_function_pointer_v<M>
  typename detail::MemberTraits<M>::Result call(M member, Given&&... args) const {
    using Traits = detail::MemberTraits<M>;
    static_assert(std::is_base_of_v<typename Traits::Class, C>,
                  "Proxy<C>::call takes a member function of C");
    using Result = typename Traits::Result;
    serial::Writer payload;
    detail::save_ref(payload, detail::code_ref<&detail::invoke_hosted<M>>());
    detail::save_member(payload, member);
    using ArgTuple = typename Traits::Args;
    const ArgTuple values{std::forward<Given>(args)...};
    serial::save(payload, values);
    auto answer = ref_.call(detail::ObjectOp::kHostedCall, payload.take(), "Proxy::call");
    if constexpr (!std::is_void_v<Result>) return serial::from_bytes<Result>(answer.bytes);
  }

  FIBER_SHARED_HANDLE(Proxy)
};

/// Makes shared objects, served by the master for as long as the program runs: every handle,
/// copied and passed to any process (a Process, a pool task, a Group member, an initializer),
/// refers to the same object, and each call on one is a single request and reply, atomic at the
/// master. Works in every launch mode and from workers (a Manager may be made in a worker; its
/// objects still live in the master). What the objects hold is lost only if the master dies.
class Manager {
 public:
  /// Needs fiber::init.
  Manager() = default;

  template <class K, class V>
  Dict<K, V> dict() const {
    serial::require_serializable<K>();
    serial::require_serializable<V>();
    return Dict<K, V>(detail::ObjectRef::create(detail::ObjectType::kDict, {}));
  }
  template <class T>
  List<T> list() const {
    serial::require_serializable<T>();
    return List<T>(detail::ObjectRef::create(detail::ObjectType::kList, {}));
  }
  template <class T>
  Value<T> value(const T& initial = T{}) const {
    serial::require_serializable<T>();
    return Value<T>(
        detail::ObjectRef::create(detail::ObjectType::kValue, serial::to_bytes(initial)));
  }
  Lock lock() const { return Lock(detail::ObjectRef::create(detail::ObjectType::kLock, {})); }
  Event event() const { return Event(detail::ObjectRef::create(detail::ObjectType::kEvent, {})); }
  /// A barrier for `parties` processes (at least 1).
  Barrier barrier(size_t parties) const {
    if (parties == 0) throw UsageError("Manager::barrier: parties must be at least 1");
    return Barrier(detail::ObjectRef::create(detail::ObjectType::kBarrier,
                                             serial::to_bytes(static_cast<uint64_t>(parties))));
  }
  /// A C constructed in the master from `args` (a throw there is a fiber::RemoteError here).
  template <class C, class... Args>
  Proxy<C> make(Args&&... args) const {
    serial::Writer payload;
    detail::save_ref(payload,
                     detail::code_ref<&detail::construct_hosted<C, std::decay_t<Args>...>>());
    detail::save_ref(payload, detail::code_ref<&detail::destroy_hosted<C>>());
    serial::save(payload, std::tuple<std::decay_t<Args>...>(std::forward<Args>(args)...));
    return Proxy<C>(detail::ObjectRef::create(detail::ObjectType::kHosted, payload.take()));
  }

  /// Wire form: a Manager passed to another process makes objects there too.
  void fiber_save(serial::Writer&) const {}
  static Manager fiber_load(serial::Reader&) { return Manager(); }
};

#undef FIBER_SHARED_HANDLE

}  // namespace fiber
