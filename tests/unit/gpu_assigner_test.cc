// GPUs shared out to workers: their own while enough are free, then the least held, given back
// when a worker's process ends; and the devices this process may use, as CUDA names them.
#include "fiber/base/gpu_assigner.h"

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "fiber/base/worker_resources.h"

namespace fiber::internal {
namespace {

TEST(GpuAssigner, WorkersGetTheirOwnWhileEnoughAreFree) {
  GpuAssigner gpus({"0", "1", "2", "3"});
  EXPECT_EQ(gpus.assign(101, 2), "0,1");
  EXPECT_EQ(gpus.assign(102, 1), "2");
  EXPECT_EQ(gpus.assign(103, 1), "3");
  EXPECT_EQ(gpus.holders(), (std::vector<int>{1, 1, 1, 1}));
}

TEST(GpuAssigner, BeyondThemTheLeastHeldAreSharedInCudaOrder) {
  GpuAssigner gpus({"GPU-a", "GPU-b", "GPU-c"});
  EXPECT_EQ(gpus.assign(1, 2), "GPU-a,GPU-b");
  EXPECT_EQ(gpus.assign(2, 2), "GPU-a,GPU-c");  // c is free; then a, first of the held once
  EXPECT_EQ(gpus.holders(), (std::vector<int>{2, 1, 1}));
  EXPECT_EQ(gpus.assign(3, 2), "GPU-b,GPU-c");
  EXPECT_EQ(gpus.holders(), (std::vector<int>{2, 2, 2}));
  // More than there are: each at most once.
  EXPECT_EQ(gpus.assign(4, 5), "GPU-a,GPU-b,GPU-c");
}

TEST(GpuAssigner, ReleasedOnesGoFirstAndReassigningGivesBackTheOldOnes) {
  GpuAssigner gpus({"0", "1"});
  EXPECT_EQ(gpus.assign(7, 1), "0");
  EXPECT_EQ(gpus.assign(8, 1), "1");
  gpus.release(7);
  EXPECT_EQ(gpus.holders(), (std::vector<int>{0, 1}));
  EXPECT_EQ(gpus.assign(9, 1), "0");
  EXPECT_EQ(gpus.assign(8, 2), "0,1");  // 8's own "1" went back before it got two
  EXPECT_EQ(gpus.holders(), (std::vector<int>{2, 1}));
  gpus.release(8);
  gpus.release(8);  // nothing held: nothing happens
  gpus.release(42);
  EXPECT_EQ(gpus.holders(), (std::vector<int>{1, 0}));
}

TEST(GpuAssigner, NoneAskedOrNoneThereGivesNothing) {
  GpuAssigner none({});
  EXPECT_EQ(none.assign(1, 2), "");
  GpuAssigner some({"0"});
  EXPECT_EQ(some.assign(1, 0), "");
  EXPECT_EQ(some.holders(), (std::vector<int>{0}));
}

EnvironmentLookup with(std::map<std::string, std::string> variables) {
  return [variables](const std::string& name) -> std::optional<std::string> {
    const auto found = variables.find(name);
    if (found == variables.end()) return std::nullopt;
    return found->second;
  };
}

TEST(VisibleGpus, CudaVisibleDevicesNamesThemInItsOrder) {
  EXPECT_EQ(visible_gpus(with({{"CUDA_VISIBLE_DEVICES", "3,1"}})),
            (std::vector<std::string>{"3", "1"}));
  EXPECT_EQ(visible_gpus(with({{"CUDA_VISIBLE_DEVICES", "GPU-8f2a,MIG-1"}})),
            (std::vector<std::string>{"GPU-8f2a", "MIG-1"}));
  EXPECT_TRUE(visible_gpus(with({{"CUDA_VISIBLE_DEVICES", ""}})).empty());
  EXPECT_TRUE(visible_gpus(with({{"CUDA_VISIBLE_DEVICES", "-1"}})).empty());
}

}  // namespace
}  // namespace fiber::internal
