#include "fiber/group/group_inbox.h"

#include <signal.h>

#include <atomic>

#include "fiber/errors.h"
#include "fiber/worker/master_link.h"

namespace fiber::internal {
namespace {

std::atomic<GroupInbox*> g_current_inbox{nullptr};

}  // namespace

GroupInbox::GroupInbox(MasterLink& link) : link_(link) {
  link.serve(Kind::kGroupPlan, [this](bridge::Received& message) {
    auto plan = wire::GroupPlan::decode(message);
    const Attempt key{plan.group, plan.attempt};
    plans_[key] = std::move(plan);
  });
  link.serve(Kind::kGroupPorts, [this](bridge::Received& message) {
    auto ports = wire::GroupPorts::decode(message);
    ports_[{ports.group, ports.attempt}] = std::move(ports.ports);
  });
  link.serve(Kind::kGroupStop, [this](bridge::Received& message) {
    on_stop_locked(wire::GroupStop::decode(message));
  });
  g_current_inbox = this;
}

GroupInbox::~GroupInbox() {
  if (g_current_inbox == this) g_current_inbox = nullptr;
}

GroupInbox& GroupInbox::current() {
  GroupInbox* inbox = g_current_inbox;
  if (!inbox) throw UsageError("this process is not a worker: it has no group inbox");
  return *inbox;
}

wire::GroupPlan GroupInbox::enter(uint64_t group, uint32_t attempt, uint64_t process) {
  const Attempt key{group, attempt};
  ProgressEngine& engine = link_.engine();
  auto held = engine.lock();
  member_ = Member{key, process};
  if (auto stopped = stops_.find(key); stopped != stops_.end())
    link_.end_process_now(process, -SIGTERM, "stopped with its group: " + stopped->second);
  // A stop that arrives while waiting ends the process from the receiving thread.
  engine.await(held, [&] { return plans_.count(key) != 0; });
  wire::GroupPlan plan = std::move(plans_.at(key));
  plans_.erase(key);
  return plan;
}

std::vector<std::string> GroupInbox::wait_ports(uint64_t group, uint32_t attempt) {
  const Attempt key{group, attempt};
  ProgressEngine& engine = link_.engine();
  auto held = engine.lock();
  engine.await(held, [&] { return ports_.count(key) != 0; });
  auto ports = std::move(ports_.at(key));
  ports_.erase(key);
  if (ports.empty()) throw ProtocolError("the master relayed no port for this group member");
  return ports;
}

void GroupInbox::leave() {
  auto held = link_.engine().lock();
  if (!member_) return;
  const uint64_t group = member_->attempt.first;
  member_.reset();
  auto of_group = [group](const auto& entry) { return entry.first.first == group; };
  std::erase_if(plans_, of_group);
  std::erase_if(ports_, of_group);
  std::erase_if(stops_, of_group);
}

void GroupInbox::on_stop_locked(const wire::GroupStop& stop) {
  const Attempt key{stop.group, stop.attempt};
  stops_[key] = stop.reason;
  if (member_ && member_->attempt == key)
    link_.end_process_now(member_->process, -SIGTERM, "stopped with its group: " + stop.reason);
}

}  // namespace fiber::internal
