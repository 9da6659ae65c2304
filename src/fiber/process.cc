#include "fiber/process.h"

#include <unistd.h>

#include <atomic>

#include "fiber/errors.h"
#include "fiber/master/master.h"
#include "fiber/runtime/runtime.h"

namespace fiber {
namespace detail {

std::shared_ptr<ProcessState> make_process_state(TaskSpec task) {
  auto& runtime = Runtime::instance();
  auto lock = runtime.lock();
  if (!runtime.is_master()) {
    // Made in a worker: it can be looked at, and starting it says why it cannot run.
    static std::atomic<uint64_t> next_id{uint64_t{1} << 62};
    auto state = std::make_shared<ProcessState>();
    state->id = next_id++;
    state->task = std::move(task);
    state->name = "Process-" + std::to_string(state->id);
    return state;
  }
  return runtime.master().new_process_locked(std::move(task), "Process");
}

}  // namespace detail

namespace {

detail::Runtime& runtime() { return detail::Runtime::instance(); }
detail::Master& master(const char* what) { return runtime().master(what); }

void require_started(const detail::ProcessState& state, const char* what) {
  if (state.status == detail::ProcessStatus::kCreated) {
    throw UsageError(std::string("can only ") + what + " a started process (" + state.name + ")");
  }
}

}  // namespace

bool Process::is_self() const {
  return state_->id == detail::kMasterId || state_->id == runtime().self_id();
}

void Process::start() {
  if (is_self()) throw UsageError("cannot start " + state_->name + ": it is the current process");
  master("a Process can only be started from the master process").start_process(state_);
}

void Process::join() {
  if (is_self()) throw UsageError("a process cannot join itself");
  {
    auto lock = runtime().lock();
    require_started(*state_, "join");
  }
  master("a Process can only be joined in the master process").wait_ended(state_, std::nullopt);
  auto lock = runtime().lock();
  if (state_->start_error) std::rethrow_exception(state_->start_error);
}

bool Process::join_for(std::chrono::nanoseconds timeout) {
  if (is_self()) throw UsageError("a process cannot join itself");
  {
    auto lock = runtime().lock();
    require_started(*state_, "join");
  }
  const bool ended = master("a Process can only be joined in the master process")
                         .wait_ended(state_, detail::Clock::now() + timeout);
  auto lock = runtime().lock();
  if (ended && state_->start_error) std::rethrow_exception(state_->start_error);
  return ended;
}

void Process::terminate() {
  if (is_self()) throw UsageError("a process cannot terminate itself; return or call std::exit");
  master("a Process can only be terminated from the master process").terminate(state_);
}

bool Process::is_alive() const {
  if (is_self()) return true;
  auto lock = runtime().lock();
  return state_->status == detail::ProcessStatus::kPending ||
         state_->status == detail::ProcessStatus::kRunning;
}

std::optional<int> Process::exitcode() const {
  if (is_self()) return std::nullopt;
  auto lock = runtime().lock();
  return state_->exitcode;
}

int Process::pid() const {
  if (is_self()) return static_cast<int>(::getpid());
  {
    auto lock = runtime().lock();
    if (state_->status == detail::ProcessStatus::kCreated) return 0;
  }
  return master("a Process's pid is known in the master process only").wait_pid(state_);
}

std::string Process::name() const {
  auto lock = runtime().lock();
  return state_->name;
}

void Process::set_name(std::string name) {
  auto lock = runtime().lock();
  state_->name = std::move(name);
}

bool Process::daemon() const {
  auto lock = runtime().lock();
  return state_->daemon;
}

void Process::set_daemon(bool daemon) {
  auto lock = runtime().lock();
  if (state_->status != detail::ProcessStatus::kCreated) {
    throw UsageError("cannot change daemon of " + state_->name + " after it started");
  }
  state_->daemon = daemon;
}

Process current_process() {
  auto& rt = runtime();
  auto state = std::make_shared<detail::ProcessState>();
  state->id = rt.self_id();
  state->name = rt.self_name();
  state->pid = static_cast<int>(::getpid());
  state->status = detail::ProcessStatus::kRunning;
  return Process(std::move(state));
}

std::vector<Process> active_children() {
  std::vector<Process> children;
  if (!runtime().is_master()) return children;
  for (auto& state : runtime().master().live_children()) children.push_back(Process(state));
  return children;
}

}  // namespace fiber
