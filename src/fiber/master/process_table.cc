#include "fiber/master/process_table.h"

#include <algorithm>

namespace fiber::internal {

std::string describe(const ProcessState& process) {
  return process.name + " (pid " + std::to_string(process.pid) + ")";
}

std::string describe_exit(const ProcessState& process, std::optional<int> code) {
  if (!code) return describe(process) + " could not start";
  const std::string account = process.error.empty() ? "" : " (" + process.error + ")";
  if (*code < 0)
    return describe(process) + " was killed by signal " + std::to_string(-*code) + account;
  return describe(process) + " exited with code " + std::to_string(*code) + account;
}

std::shared_ptr<ProcessState> ProcessTable::create(detail::TaskSpec task,
                                                   const std::string& name_prefix) {
  auto state = std::make_shared<ProcessState>();
  state->id = next_process_id_++;
  state->name = name_prefix + "-" + std::to_string(state->id);
  state->task = std::move(task);
  return state;
}

Slot& ProcessTable::add(std::unique_ptr<Slot> slot) {
  Slot& added = *slot;
  slots_[{slot->link->comm.get(), slot->rank}] = std::move(slot);
  return added;
}

Slot* ProcessTable::find(MPI_Comm comm, int rank) {
  auto it = slots_.find({comm, rank});
  return it == slots_.end() ? nullptr : it->second.get();
}

void ProcessTable::erase_gone() {
  std::erase_if(slots_, [](const auto& entry) { return entry.second->gone(); });
}

Slot* ProcessTable::pick_idle_slot(const ProcessState& process,
                                   const std::string& executable) const {
  const bool needs_fresh_process = process.pool == 0 || process.needs_fresh_process;
  Slot* best = nullptr;
  int best_preference = 0;
  for (const auto& [key, slot] : slots_) {
    if (slot->state != Slot::State::kIdle || slot->leaving || slot->releasing ||
        !runs(*slot, executable))
      continue;
    // A pool worker that wants a fresh process never takes one that runs one after another.
    if (process.needs_fresh_process && !slot->spawned()) continue;
    int preference = 0;  // lower is better
    if (!slot->spawned()) {
      // The static world's ranks and joined jobs are there anyway; they run one process after
      // another.
      preference = slot->joined() ? 1 : 0;
    } else if (needs_fresh_process) {
      if (slot->used) continue;
      preference = 2;
    } else {
      // Pools take workers that served a pool before, keeping never-used ones for Processes.
      preference = slot->used ? 2 : 3;
    }
    if (!best || preference < best_preference) {
      best = slot.get();
      best_preference = preference;
    }
  }
  return best;
}

std::vector<Slot*> ProcessTable::reserve_to_trim(Clock::time_point now,
                                                 const std::string& executable,
                                                 bool* fresh_expired) const {
  std::vector<Slot*> idle;
  for (const auto& [key, slot] : slots_) {
    if (slot->spawned() && slot->state == Slot::State::kIdle && !slot->process)
      idle.push_back(slot.get());
  }
  std::sort(idle.begin(), idle.end(), [](const Slot* a, const Slot* b) {
    if (a->used != b->used) return a->used;
    return a->idle_since < b->idle_since;
  });
  const auto limit = static_cast<size_t>(settings_.reserve_max_idle);
  size_t excess = idle.size() > limit ? idle.size() - limit : 0;
  std::vector<Slot*> trim;
  for (Slot* slot : idle) {
    const bool over_limit = excess > 0;
    if (over_limit) --excess;
    const bool expired = now - slot->idle_since > settings_.reserve_idle_timeout;
    if (!over_limit && !expired && runs(*slot, executable)) continue;
    if (expired && !slot->used && fresh_expired) *fresh_expired = true;
    trim.push_back(slot);
  }
  return trim;
}

int ProcessTable::spawn_wanted(int coming, bool keep_processes_ahead,
                               const std::string& executable) const {
  const int missing = static_cast<int>(pending_.size()) - coming;
  int wanted = std::max(0, missing);
  if (keep_processes_ahead) {
    // Never-used workers ready for the next Processes; those in flight beyond the pending ones
    // count.
    int fresh = std::max(0, -missing);
    for (const auto& [key, slot] : slots_) {
      if (slot->spawned() && slot->state == Slot::State::kIdle && !slot->used && !slot->leaving &&
          runs(*slot, executable))
        ++fresh;
    }
    const int ahead = std::min(settings_.processes_ahead, settings_.reserve_max_idle);
    wanted += std::max(0, ahead - fresh);
  }
  return wanted;
}

}  // namespace fiber::internal
