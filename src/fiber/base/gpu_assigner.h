// Shares out the GPUs of the master's machine to the workers there whose pool asks for some
// (Pool::Options::gpus_per_worker): each worker gets GPUs of its own while enough are free, then
// the ones the fewest workers hold (oversubscription stays allowed, as for cores). A worker holds
// them while it runs its pool's process; what it got becomes its CUDA_VISIBLE_DEVICES. Free of
// MPI. Internal.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace fiber::internal {

class GpuAssigner {
 public:
  /// `devices`: the GPUs workers may be given, as CUDA names them (visible_gpus(): the master's
  /// CUDA_VISIBLE_DEVICES entries, else the indices of /dev/nvidiaN).
  explicit GpuAssigner(std::vector<std::string> devices);

  /// Gives worker `pid` `count` GPUs, the least held first (fewest holders, then the order of
  /// `devices`), and returns them as a CUDA_VISIBLE_DEVICES value ("0,1"). Empty when `count` is
  /// 0 or there are none. A worker that still holds some gives those back first. Never more
  /// than there are devices.
  std::string assign(int pid, int count);
  /// Gives back what `pid` holds (its process ended, or it is gone); nothing when it holds none.
  void release(int pid);
  /// How many workers hold each device, in the order of `devices`.
  std::vector<int> holders() const { return holders_; }

 private:
  std::vector<std::string> devices_;
  std::vector<int> holders_;
  std::map<int, std::vector<size_t>> held_;  ///< pid -> indices into devices_
};

}  // namespace fiber::internal
