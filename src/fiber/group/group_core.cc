#include "fiber/group/group_core.h"

#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <map>

#include "fiber/base/log.h"
#include "fiber/errors.h"
#include "fiber/group/group_member.h"

namespace fiber::internal {

GroupCore::GroupCore(GroupHost& host, uint64_t id, GroupSettings settings,
                     std::chrono::milliseconds stop_grace)
    : host_(host), id_(id), settings_(std::move(settings)), stop_grace_(stop_grace) {
  serial::Writer writer;
  detail::save_task(writer, settings_.task);
  task_bytes_ = writer.take();
}

void GroupCore::start_locked() {
  if (state_ != State::kCreated) throw UsageError(name() + ": a group can only be started once");
  state_ = State::kRunning;
  begin_attempt_locked();
}

void GroupCore::begin_attempt_locked() {
  const uint32_t attempt = ++attempt_;
  members_.clear();
  island_leaders_.clear();
  planned_ = false;
  failed_ = false;
  start_error_ = nullptr;
  std::vector<std::shared_ptr<ProcessState>> started;
  for (int k = 0; k < settings_.size; ++k) {
    detail::TaskSpec task = detail::make_task(group_member_main, id_, attempt_, task_bytes_);
    // The members may put into the queues the user's function was given.
    task.produces = settings_.task.produces;
    auto process = host_.new_process_locked(std::move(task), name());
    process->group = id_;
    process->name = name() + "." + std::to_string(k);
    Member member;
    member.process = process;
    members_.push_back(std::move(member));
    started.push_back(process);
  }
  // Starting may place a member at once (the plan goes out once the last is placed), or fail
  // one at once, which stops this attempt (and may begin the next one) before the rest start.
  for (auto& process : started) {
    if (attempt_ != attempt || failed_) break;
    host_.start_process_locked(process);
  }
}

GroupCore::Member* GroupCore::find_locked(uint64_t process_id) {
  for (auto& member : members_)
    if (member.process->id == process_id) return &member;
  return nullptr;
}

void GroupCore::on_member_placed_locked(const ProcessState& process) {
  Member* member = find_locked(process.id);
  if (!member || member->ended) return;
  member->placed = true;
  if (observer_) observer_();
  if (failed_) {
    // Placed after the attempt failed: it is stopped like the others.
    member->stop_sent_at = host_.now();
    host_.send_to_process_locked(
        *member->process, wire::GroupStop{id_, attempt_, "its group's attempt failed"}.encode());
    return;
  }
  if (!planned_ &&
      std::all_of(members_.begin(), members_.end(), [](const Member& m) { return m.placed; }))
    send_plans_locked();
}

void GroupCore::send_plans_locked() {
  planned_ = true;
  // Members that share an MPI world form an island; the static world's island first (its
  // members talk over shared memory), then the others in the order their first member started.
  std::vector<const void*> worlds;
  std::map<const void*, std::vector<std::pair<int, size_t>>> by_world;  // (world rank, member)
  std::vector<GroupHost::Placement> placements;
  for (size_t i = 0; i < members_.size(); ++i) {
    const auto placement = host_.placement_locked(*members_[i].process);
    placements.push_back(placement.value_or(GroupHost::Placement{}));
    auto& island = by_world[placements.back().world];
    if (island.empty()) worlds.push_back(placements.back().world);
    island.emplace_back(placements.back().world_rank, i);
  }
  std::stable_partition(worlds.begin(), worlds.end(), [&](const void* world) {
    return placements[by_world[world].front().second].static_world;
  });
  wire::GroupPlan plan;
  plan.group = id_;
  plan.attempt = attempt_;
  plan.restarts = restarts_;
  std::vector<Member> ranked;
  std::vector<int> island_of;
  for (const void* world : worlds) {
    auto& island = by_world[world];
    std::sort(island.begin(), island.end());
    island_leaders_.push_back(ranked.size());
    std::vector<int> world_ranks;
    for (const auto& [world_rank, index] : island) {
      world_ranks.push_back(world_rank);
      ranked.push_back(std::move(members_[index]));
      island_of.push_back(static_cast<int>(plan.islands.size()));
    }
    plan.islands.push_back(std::move(world_ranks));
  }
  members_ = std::move(ranked);
  for (size_t rank = 0; rank < members_.size(); ++rank) {
    members_[rank].process->name = name() + "." + std::to_string(rank);
    plan.rank = static_cast<int>(rank);
    plan.island = island_of[rank];
    host_.send_to_process_locked(*members_[rank].process, plan.encode());
  }
}

void GroupCore::on_ports_locked(const ProcessState& from, const wire::GroupPorts& ports) {
  if (ports.attempt != attempt_ || !planned_ || failed_ || island_leaders_.empty() ||
      members_[island_leaders_.front()].process->id != from.id ||
      ports.ports.size() + 1 != island_leaders_.size()) {
    FIBER_LOG_WARNING("%s: ignored ports from %s (attempt %u)", name().c_str(),
                      describe(from).c_str(), ports.attempt);
    return;
  }
  for (size_t island = 1; island < island_leaders_.size(); ++island) {
    host_.send_to_process_locked(
        *members_[island_leaders_[island]].process,
        wire::GroupPorts{id_, attempt_, {ports.ports[island - 1]}}.encode());
  }
}

void GroupCore::on_member_ended_locked(const ProcessState& process) {
  Member* member = find_locked(process.id);
  if (!member || member->ended) return;
  member->ended = true;
  member->exitcode = process.exitcode;
  if (!process.exitcode && process.start_error && !start_error_) start_error_ = process.start_error;
  if (!failed_ && process.exitcode != 0) {
    failed_ = true;
    const std::string why = describe_exit(process, process.exitcode);
    FIBER_LOG_WARNING("%s: %s; stopping the other members", name().c_str(), why.c_str());
    stop_members_locked(why);
  }
  attempt_over_locked();
  if (observer_) observer_();
}

void GroupCore::stop_members_locked(const std::string& why) {
  std::vector<std::shared_ptr<ProcessState>> not_placed;
  for (auto& member : members_) {
    if (member.ended || member.stop_sent_at) continue;
    if (member.placed) {
      member.stop_sent_at = host_.now();
      host_.send_to_process_locked(*member.process, wire::GroupStop{id_, attempt_, why}.encode());
    } else if (member.process->status == ProcessStatus::kCreated) {
      member.ended = true;  // never started
    } else {
      not_placed.push_back(member.process);
    }
  }
  // Ending a process that waits for its place reports its end at once (on_member_ended_locked).
  for (auto& process : not_placed) host_.terminate_locked(process, SIGTERM);
}

void GroupCore::attempt_over_locked() {
  if (state_ != State::kRunning) return;
  if (!std::all_of(members_.begin(), members_.end(), [](const Member& m) { return m.ended; }))
    return;
  if (failed_ && !terminated_ && restarts_ < settings_.max_restarts) {
    ++restarts_;
    FIBER_LOG_WARNING("%s: starting again (restart %d of %d)", name().c_str(), restarts_,
                      settings_.max_restarts);
    begin_attempt_locked();
    return;
  }
  state_ = State::kEnded;
}

void GroupCore::terminate_locked() {
  if (state_ != State::kRunning) return;
  terminated_ = true;
  if (!failed_) {
    failed_ = true;
    stop_members_locked(name() + " was terminated");
  }
  attempt_over_locked();
  if (observer_) observer_();
}

void GroupCore::tick_locked(std::chrono::steady_clock::time_point now) {
  for (auto& member : members_) {
    if (member.ended || member.given_up || !member.stop_sent_at ||
        now - *member.stop_sent_at < stop_grace_)
      continue;
    member.given_up = true;
    // Giving up ends the process, which may end the attempt: nothing below touches members_.
    host_.give_up_locked(*member.process, "told to stop with " + name() + " " +
                                              std::to_string(stop_grace_.count()) +
                                              " ms ago, it has not ended");
    return;
  }
}

std::vector<std::optional<int>> GroupCore::exitcodes_locked() const {
  std::vector<std::optional<int>> codes;
  for (const auto& member : members_) codes.push_back(member.exitcode);
  return codes;
}

std::vector<int> GroupCore::member_pids_locked() const {
  std::vector<int> pids;
  for (const auto& member : members_) {
    if (member.placed && !member.ended && member.process->pid > 0)
      pids.push_back(member.process->pid);
  }
  return pids;
}

}  // namespace fiber::internal
