#include "fiber/master/join_acceptor.h"
#include "fiber/base/log.h"

#include <chrono>
#include <cstdio>

namespace fiber::internal {

std::string JoinAcceptor::open() {
  if (!rendezvous_) {
    rendezvous_ = std::make_unique<bridge::Rendezvous>();
    thread_ = std::thread([this] { loop(); });
  }
  return rendezvous_->address();
}

void JoinAcceptor::loop() {
  struct Exit {
    std::atomic<bool>& exited;
    ~Exit() { exited.store(true); }
  } mark_exit{exited_};
  while (!stopping_) {
    bridge::Communicator joined;
    try {
      joined = rendezvous_->accept();
    } catch (const std::exception& e) {
      if (stopping_) return;
      FIBER_LOG_WARNING("accepting a joining job failed: %s", e.what());
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      continue;
    }
    // A job that joins while the runtime stops is left to end with this process: freeing its
    // communicator would be an MPI call racing the finalize.
    if (stopping_) {
      (void)joined.release();
      return;
    }
    auto link = std::make_unique<Link>();
    const int workers = joined.remote_size();
    end_turn();
    link->comm = std::move(joined);
    link->connected = true;
    link->live_slots = workers;
    link->expected_hellos = workers;
    link->created = Clock::now();
    link->last_heard = link->created;
    engine_.add_link(std::move(link));
  }
}

void JoinAcceptor::begin_turn() {
  if (!turn_holds_.exchange(true)) engine_.hold_traffic();
}

void JoinAcceptor::end_turn() {
  if (turn_holds_.exchange(false)) engine_.release_traffic();
}

bool JoinAcceptor::stop() {
  if (!thread_.joinable()) return true;
  stopping_ = true;
  thread_.detach();
  return exited_.load();
}

}  // namespace fiber::internal
