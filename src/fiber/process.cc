#include "fiber/process.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <string>

#include "fiber/base/worker_resources.h"
#include "fiber/errors.h"
#include "fiber/process/process_control.h"
#include "fiber/runtime/runtime.h"

namespace fiber {
namespace detail {

std::shared_ptr<internal::ProcessState> make_process_state(TaskSpec task) {
  return internal::Runtime::instance().processes().new_process(std::move(task));
}

}  // namespace detail

namespace {

internal::Runtime& runtime() { return internal::Runtime::instance(); }
internal::ProcessControl& processes() { return runtime().processes(); }

void require_started(const internal::ProcessState& state, const char* what) {
  if (state.status == internal::ProcessStatus::kCreated) {
    throw UsageError(std::string("can only ") + what + " a started process (" + state.name + ")");
  }
}

}  // namespace

bool Process::is_self() const {
  return state_->id == internal::kMasterId || state_->id == runtime().self_id();
}

void Process::start() {
  if (is_self()) throw UsageError("cannot start " + state_->name + ": it is the current process");
  processes().start_process(state_);
}

void Process::join() {
  if (is_self()) throw UsageError("a process cannot join itself");
  {
    auto lock = runtime().lock();
    require_started(*state_, "join");
  }
  processes().wait_ended(state_, std::nullopt);
  auto lock = runtime().lock();
  if (state_->start_error) std::rethrow_exception(state_->start_error);
}

bool Process::join_for(std::chrono::nanoseconds timeout) {
  if (is_self()) throw UsageError("a process cannot join itself");
  {
    auto lock = runtime().lock();
    require_started(*state_, "join");
  }
  const bool ended = processes().wait_ended(state_, internal::Clock::now() + timeout);
  auto lock = runtime().lock();
  if (ended && state_->start_error) std::rethrow_exception(state_->start_error);
  return ended;
}

void Process::terminate() {
  if (is_self()) throw UsageError("a process cannot terminate itself; return or call std::exit");
  processes().terminate(state_, SIGTERM);
}

void Process::kill() {
  if (is_self()) throw UsageError("a process cannot kill itself; return or call std::exit");
  processes().terminate(state_, SIGKILL);
}

bool Process::is_alive() const {
  if (is_self()) return true;
  auto lock = runtime().lock();
  return state_->status == internal::ProcessStatus::kPending ||
         state_->status == internal::ProcessStatus::kRunning;
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
    if (state_->status == internal::ProcessStatus::kCreated) return 0;
  }
  return processes().wait_pid(state_);
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
  if (state_->status != internal::ProcessStatus::kCreated) {
    throw UsageError("cannot change daemon of " + state_->name + " after it started");
  }
  state_->daemon = daemon;
}

void Process::set_resources(int cpus, uint64_t memory, int gpus) {
  if (cpus < 0 || gpus < 0)
    throw UsageError("Process::set_resources: cpus and gpus must be at least 0 (got " +
                     std::to_string(cpus) + " and " + std::to_string(gpus) + ")");
  // Checked in the master only: a worker sees the GPUs its own work was given, or another host.
  if ((cpus > 0 || memory > 0 || gpus > 0) && runtime().self_id() == internal::kMasterId) {
    const internal::MachineFacts machine =
        memory > 0 || gpus > 0 ? internal::read_machine() : internal::MachineFacts{};
    internal::check_worker_request(
        {.who = name(), .processes = 1, .cpus = cpus, .memory = memory, .gpus = gpus},
        internal::process_environment(), machine);
  }
  auto lock = runtime().lock();
  if (state_->status != internal::ProcessStatus::kCreated)
    throw UsageError("cannot change the resources of " + state_->name + " after it started");
  state_->cores = std::max(1, cpus);
  state_->gpus = gpus;
}

Process current_process() {
  auto& rt = runtime();
  auto state = std::make_shared<internal::ProcessState>();
  state->id = rt.self_id();
  state->name = rt.self_name();
  state->pid = static_cast<int>(::getpid());
  state->status = internal::ProcessStatus::kRunning;
  return Process(std::move(state));
}

std::vector<Process> active_children() {
  std::vector<Process> children;
  for (auto& state : processes().live_children()) children.push_back(Process(state));
  return children;
}

}  // namespace fiber
