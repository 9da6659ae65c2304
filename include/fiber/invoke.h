// Turning a callable and its arguments into something another process can run: references to
// the code (never the code itself) and the serialized arguments.
#pragma once

#include <cstdint>
#include <exception>
#include <functional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "fiber/function_ref.h"
#include "fiber/serialization.h"

namespace fiber::detail {

/// The entry point a worker calls: decodes the arguments, runs the callable and, when `result`
/// is given, encodes the return value into it.
using Invoker = void (*)(void* fn, serial::Reader& args, serial::Writer* result);

/// A callable bound to its arguments, ready to travel.
struct TaskSpec {
  detail::FunctionRef invoker;
  detail::FunctionRef fn;  ///< Zero for stateless callable classes (captureless lambdas).
  std::vector<std::byte> args;
  std::vector<uint64_t> produces;  ///< Queues the task can put into (handles among its arguments).
};

/// Collects the queue handles serialized while a TaskSpec is built, so the runtime knows which
/// processes may still produce into which queue.
class HandleCollector {
 public:
  HandleCollector() : previous_(current_) { current_ = this; }
  ~HandleCollector() { current_ = previous_; }
  HandleCollector(const HandleCollector&) = delete;
  HandleCollector& operator=(const HandleCollector&) = delete;

  static void note_producer(uint64_t queue_id) {
    if (current_) current_->produces_.push_back(queue_id);
  }
  std::vector<uint64_t> take() { return std::move(produces_); }

 private:
  static inline thread_local HandleCollector* current_ = nullptr;
  HandleCollector* previous_;
  std::vector<uint64_t> produces_;
};

template <class T>
struct FunctionTraits;
template <class R, class... P>
struct FunctionTraits<R (*)(P...)> {
  using Result = R;
  using Args = std::tuple<std::decay_t<P>...>;
};
template <class R, class... P>
struct FunctionTraits<R (*)(P...) noexcept> : FunctionTraits<R (*)(P...)> {};
template <class C, class R, class... P>
struct FunctionTraits<R (C::*)(P...) const> : FunctionTraits<R (*)(P...)> {};
template <class C, class R, class... P>
struct FunctionTraits<R (C::*)(P...) const noexcept> : FunctionTraits<R (*)(P...)> {};

template <class F>
concept FunctionPointer = std::is_pointer_v<F> && std::is_function_v<std::remove_pointer_t<F>>;

/// A class the worker can make for itself: empty and default-constructible (a captureless lambda
/// or a stateless function object).
template <class F>
concept StatelessCallable =
    std::is_class_v<F> && std::is_empty_v<F> && std::is_default_constructible_v<F>;

template <class F>
concept HasSingleCallOperator = requires {
  &F::operator();
};

/// The decayed argument tuple a callable is invoked with: its declared parameters when they can be
/// seen, otherwise (generic lambdas) the argument types given.
template <class F, class... Given>
struct ArgumentsOf {
  using type = std::tuple<std::decay_t<Given>...>;
};
template <FunctionPointer F, class... Given>
struct ArgumentsOf<F, Given...> {
  using type = typename FunctionTraits<F>::Args;
};
template <StatelessCallable F, class... Given>
requires HasSingleCallOperator<F>
struct ArgumentsOf<F, Given...> {
  using type = typename FunctionTraits<decltype(&F::operator())>::Args;
};

template <class Callable, class ArgsTuple>
struct ResultOf;
template <class Callable, class... A>
struct ResultOf<Callable, std::tuple<A...>> {
  using type = std::invoke_result_t<Callable, A&...>;
};

template <class F, class ArgsTuple>
void invoke_entry(void* fn, serial::Reader& reader, serial::Writer* result) {
  ArgsTuple args{};
  serial::load(reader, args);
  auto call = [&]() -> decltype(auto) {
    if constexpr (FunctionPointer<F>) {
      return std::apply(reinterpret_cast<F>(fn), args);
    } else {
      return std::apply(F{}, args);
    }
  };
  using R = typename ResultOf<std::conditional_t<FunctionPointer<F>, F, F&>, ArgsTuple>::type;
  if constexpr (std::is_void_v<R>) {
    call();
  } else if (result) {
    serial::save(*result, call());
  } else {
    call();
  }
}

/// The references a worker needs to call `fn` with an ArgsTuple: the invoker, and the function
/// itself unless the callable is a stateless class the worker makes for itself.
template <class F, class ArgsTuple>
std::pair<detail::FunctionRef, detail::FunctionRef> encode_callable(const F& fn) {
  static_assert(
      FunctionPointer<F> || StatelessCallable<F>,
      "fibermpi: only free functions, captureless lambdas and stateless function objects can "
      "run in another process (code travels by reference); pass captured values as arguments");
  auto& modules = detail::ModuleTable::instance();
  detail::FunctionRef invoker =
      modules.encode(reinterpret_cast<const void*>(&invoke_entry<F, ArgsTuple>));
  detail::FunctionRef function;
  if constexpr (FunctionPointer<F>)
    function = modules.encode(reinterpret_cast<const void*>(fn));
  else
    static_cast<void>(fn);
  return {invoker, function};
}

/// Builds the TaskSpec for `fn(args...)`. Rejects at compile time what cannot travel.
template <class Fn, class... Args>
TaskSpec make_task(Fn&& fn, Args&&... args) {
  using F = std::decay_t<Fn>;
  static_assert(
      FunctionPointer<F> || StatelessCallable<F>,
      "fibermpi: only free functions, captureless lambdas and stateless function objects can "
      "run in another process (code travels by reference); pass captured values as arguments");
  using ArgsTuple = typename ArgumentsOf<F, Args...>::type;
  static_assert(std::tuple_size_v<ArgsTuple> == sizeof...(Args),
                "fibermpi: wrong number of arguments for this function");
  static_assert(std::is_constructible_v<ArgsTuple, Args&&...>,
                "fibermpi: the arguments do not convert to the function's parameter types");
  serial::require_serializable<ArgsTuple>();

  TaskSpec task;
  std::tie(task.invoker, task.fn) = encode_callable<F, ArgsTuple>(fn);
  HandleCollector collector;
  task.args = serial::to_bytes(ArgsTuple(std::forward<Args>(args)...));
  task.produces = collector.take();
  return task;
}

/// Encodes a TaskSpec for the wire.
inline void save_task(serial::Writer& writer, const TaskSpec& task) {
  serial::save(writer, task.invoker.module_id);
  serial::save(writer, task.invoker.offset);
  serial::save(writer, task.fn.module_id);
  serial::save(writer, task.fn.offset);
  serial::save(writer, task.args);
}

inline TaskSpec load_task(serial::Reader& reader) {
  TaskSpec task;
  serial::load(reader, task.invoker.module_id);
  serial::load(reader, task.invoker.offset);
  serial::load(reader, task.fn.module_id);
  serial::load(reader, task.fn.offset);
  serial::load(reader, task.args);
  return task;
}

/// Runs a received task in this process; `result` receives the encoded return value if given.
/// Throws ProtocolError when the references do not resolve, and whatever the callable throws.
void run_task(const TaskSpec& task, serial::Writer* result);

/// Readable name of the exception type currently being handled.
std::string current_exception_type_name();

}  // namespace fiber::detail
