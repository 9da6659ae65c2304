#include "fiber/base/gpu_assigner.h"

#include <algorithm>
#include <numeric>

namespace fiber::internal {

GpuAssigner::GpuAssigner(std::vector<std::string> devices)
    : devices_(std::move(devices)), holders_(devices_.size(), 0) {}

std::string GpuAssigner::assign(int pid, int count) {
  release(pid);
  if (count <= 0 || devices_.empty()) return {};
  std::vector<size_t> order(devices_.size());
  std::iota(order.begin(), order.end(), 0);
  // Stable: among devices held equally often, the first listed comes first.
  std::stable_sort(order.begin(), order.end(),
                   [this](size_t a, size_t b) { return holders_[a] < holders_[b]; });
  order.resize(std::min(order.size(), static_cast<size_t>(count)));
  // In the order CUDA lists them, so that a worker's device 0 is the first of its own.
  std::sort(order.begin(), order.end());
  std::string visible;
  for (const size_t index : order) {
    ++holders_[index];
    visible += (visible.empty() ? "" : ",") + devices_[index];
  }
  held_[pid] = std::move(order);
  return visible;
}

void GpuAssigner::release(int pid) {
  const auto found = held_.find(pid);
  if (found == held_.end()) return;
  for (const size_t index : found->second) --holders_[index];
  held_.erase(found);
}

}  // namespace fiber::internal
