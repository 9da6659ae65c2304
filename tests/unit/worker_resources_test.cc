// A pool's request for each worker's CPUs, memory and GPUs against a Slurm allocation, a
// FiberJob's worker template and a machine, as each describes itself in the environment.
#include "fiber/base/worker_resources.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "fiber/errors.h"

namespace fiber::internal {
namespace {

using Variables = std::map<std::string, std::string>;

EnvironmentLookup lookup(Variables variables) {
  return [variables = std::move(variables)](const std::string& name) -> std::optional<std::string> {
    const auto found = variables.find(name);
    if (found == variables.end()) return std::nullopt;
    return found->second;
  };
}

constexpr uint64_t kGiB = uint64_t{1} << 30;
const MachineFacts kLaptop{.cores = 2, .memory = 8 * kGiB, .gpus = 0};

std::string refusal(const WorkerRequest& request, const Variables& variables,
                    const MachineFacts& machine = kLaptop) {
  try {
    check_worker_request(request, lookup(variables), machine);
  } catch (const UsageError& error) {
    return error.what();
  }
  return {};
}

TEST(Quantity, KubernetesSuffixes) {
  EXPECT_DOUBLE_EQ(parse_quantity("500m", "x"), 0.5);
  EXPECT_DOUBLE_EQ(parse_quantity("2", "x"), 2);
  EXPECT_DOUBLE_EQ(parse_quantity("1.5", "x"), 1.5);
  EXPECT_DOUBLE_EQ(parse_quantity("4Gi", "x"), 4.0 * kGiB);
  EXPECT_DOUBLE_EQ(parse_quantity("512Mi", "x"), 512.0 * (1 << 20));
  EXPECT_DOUBLE_EQ(parse_quantity("1G", "x"), 1e9);
  EXPECT_DOUBLE_EQ(parse_quantity("100k", "x"), 1e5);
  EXPECT_DOUBLE_EQ(parse_quantity("1e3", "x"), 1e3);
  EXPECT_DOUBLE_EQ(parse_quantity("5E-1", "x"), 0.5);
}

TEST(Quantity, MalformedNamesTheVariable) {
  for (const char* text : {"", "m", "2 Gi", "-1", "1Xi", "abc", "1e"}) {
    try {
      parse_quantity(text, "FIBER_K8S_WORKER_MEMORY");
      ADD_FAILURE() << "accepted '" << text << "'";
    } catch (const UsageError& error) {
      EXPECT_NE(std::string(error.what())
                    .find("FIBER_K8S_WORKER_MEMORY='" + std::string(text) +
                          "' is not a Kubernetes quantity"),
                std::string::npos)
          << error.what();
    }
  }
}

TEST(SlurmCpus, CompressedList) {
  const NodeCpus cpus = parse_slurm_cpus_per_node("4(x2),2");
  EXPECT_EQ(cpus.total, 10);
  EXPECT_EQ(cpus.largest, 4);
  EXPECT_EQ(cpus.nodes, 3);
  EXPECT_EQ(parse_slurm_cpus_per_node("8").total, 8);
  EXPECT_THROW(parse_slurm_cpus_per_node("4(x"), UsageError);
  EXPECT_THROW(parse_slurm_cpus_per_node("x"), UsageError);
  EXPECT_THROW(parse_slurm_cpus_per_node(""), UsageError);
}

// Found by fuzz_launch_site: counts whose product or sum a long cannot hold overflowed (UBSan).
TEST(SlurmCpus, CountsNoAllocationCanHaveAreRefused) {
  for (const std::string text : {"41(x2121055555555555555)", "9223372036854775807,1",
                                 "4611686018427387904(x2)", "1(x2147483647),1"}) {
    try {
      parse_slurm_cpus_per_node(text);
      ADD_FAILURE() << text << " was taken";
    } catch (const UsageError& error) {
      EXPECT_NE(std::string(error.what()).find("SLURM_JOB_CPUS_PER_NODE='" + text + "'"),
                std::string::npos)
          << error.what();
    }
  }
  EXPECT_EQ(parse_slurm_cpus_per_node("1(x2147483647)").nodes, 2147483647);
}

const Variables kAllocation = {{"SLURM_JOB_ID", "77"},
                               {"SLURM_JOB_CPUS_PER_NODE", "8(x2)"},
                               {"SLURM_MEM_PER_NODE", "16384"},
                               {"SLURM_GPUS_ON_NODE", "2"}};

TEST(SlurmAllocation, WhatFitsPasses) {
  EXPECT_EQ(refusal({.processes = 4, .cpus = 4, .memory = 8 * kGiB, .gpus = 1}, kAllocation), "");
  // Nothing asked: nothing checked, whatever the pool's size.
  EXPECT_EQ(refusal({.processes = 100}, kAllocation), "");
}

TEST(SlurmAllocation, AWorkerLargerThanANodeIsRefused) {
  EXPECT_EQ(refusal({.processes = 1, .cpus = 12}, kAllocation),
            "Pool of 1 worker asks for 12 CPUs per worker, and the Slurm allocation 77's largest "
            "node has 8 CPUs; ask for less, or ask Slurm for more (sbatch/salloc -n, -c, --mem, "
            "--gpus-per-node)");
  EXPECT_NE(
      refusal({.processes = 1, .memory = 20 * kGiB}, kAllocation)
          .find("asks for 20.0 GiB per worker, and the Slurm allocation 77 gives a node 16.0 GiB"),
      std::string::npos);
  EXPECT_NE(
      refusal({.processes = 1, .gpus = 3}, kAllocation)
          .find("asks for 3 GPUs per worker, and the Slurm allocation 77 gives this node 2 GPUs"),
      std::string::npos);
}

TEST(SlurmAllocation, MoreThanTheAllocationInAllIsRefused) {
  EXPECT_NE(refusal({.processes = 5, .cpus = 4}, kAllocation)
                .find("Pool of 5 workers asks for 4 CPUs per worker (20 in all), and the Slurm "
                      "allocation 77 has 16 CPUs on 2 nodes"),
            std::string::npos);
  EXPECT_NE(refusal({.processes = 5, .gpus = 1}, kAllocation)
                .find("(5 in all), and the Slurm allocation 77 has 4 GPUs (2 on each of 2 nodes)"),
            std::string::npos);
}

TEST(SlurmAllocation, MemoryPerCpu) {
  const Variables per_cpu = {
      {"SLURM_JOB_ID", "9"}, {"SLURM_JOB_CPUS_PER_NODE", "4"}, {"SLURM_MEM_PER_CPU", "1024"}};
  EXPECT_EQ(refusal({.processes = 1, .memory = 4 * kGiB}, per_cpu), "");
  EXPECT_NE(refusal({.processes = 1, .memory = 5 * kGiB}, per_cpu).find("gives a node 4.0 GiB"),
            std::string::npos);
}

const Variables kFiberJob = {{"FIBER_K8S_ROLE", "launcher"},
                             {"FIBER_K8S_JOB", "ppo"},
                             {"FIBER_SLOTS_PER_WORKER", "2"},
                             {"FIBER_K8S_WORKER_CPU", "4"},
                             {"FIBER_K8S_WORKER_MEMORY", "8Gi"},
                             {"FIBER_K8S_WORKER_GPUS", "2"},
                             // A FiberJob's pods may sit on a Slurm node: the job decides.
                             {"SLURM_JOB_ID", "1"},
                             {"SLURM_JOB_CPUS_PER_NODE", "1"}};

TEST(FiberJob, EachWorkerGetsItsShareOfThePod) {
  EXPECT_EQ(refusal({.processes = 64, .cpus = 2, .memory = 4 * kGiB, .gpus = 1}, kFiberJob), "");
}

TEST(FiberJob, ARequestBeyondTheWorkerTemplateNamesBoth) {
  EXPECT_EQ(refusal({.processes = 8, .cpus = 3}, kFiberJob),
            "Pool of 8 workers asks for 3 CPUs per worker, and FiberJob 'ppo' gives each worker "
            "pod cpu 4, shared by its 2 slots (2 per worker); ask for less, or give "
            "spec.workers.template's container more resources (one worker template per job)");
  EXPECT_NE(refusal({.processes = 1, .memory = 5 * kGiB}, kFiberJob)
                .find("asks for 5.0 GiB per worker, and FiberJob 'ppo' gives each worker pod "
                      "memory 8Gi, shared by its 2 slots (4.0 GiB per worker)"),
            std::string::npos);
  EXPECT_NE(refusal({.processes = 1, .gpus = 2}, kFiberJob).find("(1 per worker)"),
            std::string::npos);
}

TEST(FiberJob, ATemplateWithoutGpusRefusesAGpuRequest) {
  const Variables plain = {{"FIBER_K8S_ROLE", "launcher"}, {"FIBER_K8S_JOB", "es"}};
  EXPECT_NE(refusal({.processes = 1, .gpus = 1}, plain)
                .find("FiberJob 'es' gives each worker pod no GPU (its worker template asks for "
                      "none)"),
            std::string::npos);
  // What the template leaves open is not checked.
  EXPECT_EQ(refusal({.processes = 1, .cpus = 64, .memory = 1000 * kGiB}, plain), "");
}

TEST(ThisMachine, CpusOnlyShapeBinding) {
  EXPECT_EQ(refusal({.processes = 16, .cpus = 4}, {}), "");
}

TEST(ThisMachine, MemoryAndGpusMustFitOneWorker) {
  EXPECT_EQ(refusal({.processes = 1, .gpus = 1}, {}),
            "Pool of 1 worker asks for 1 GPU per worker, and this machine has 0 GPUs (NVIDIA "
            "devices, or those CUDA_VISIBLE_DEVICES names); ask for less, or run it where there "
            "is more");
  EXPECT_NE(refusal({.processes = 2, .memory = 9 * kGiB}, {})
                .find("asks for 9.0 GiB per worker, and this machine has 8.0 GiB"),
            std::string::npos);
  EXPECT_EQ(refusal({.processes = 2, .memory = 4 * kGiB, .gpus = 1}, {},
                    {.cores = 2, .memory = 8 * kGiB, .gpus = 1}),
            "");
}

TEST(ThisMachine, ReadsSomethingReal) {
  const MachineFacts machine = read_machine();
  EXPECT_GE(machine.cores, 1);
  EXPECT_GT(machine.memory, uint64_t{1} << 26);
  EXPECT_GE(machine.gpus, 0);
}

TEST(BadEnvironment, AMalformedCountNamesTheVariable) {
  EXPECT_EQ(refusal({.processes = 1, .memory = kGiB},
                    {{"SLURM_JOB_ID", "3"}, {"SLURM_MEM_PER_NODE", "lots"}}),
            "SLURM_MEM_PER_NODE='lots' is not a count");
}

}  // namespace
}  // namespace fiber::internal
