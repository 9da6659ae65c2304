// libFuzzer target: what a launcher and a scheduler tell a process about where it runs: the
// Slurm, MPI, PBS, LSF and FiberJob variables, the hostfile one of them names, Slurm's per-node
// CPU counts, and a Kubernetes quantity (a pool's per-worker request). The input is lines:
// "c=value" sets the variable character c picks, any other line is the hostfile's. The property: a
// launch site, or fiber::Error naming what is wrong; no crash or sanitizer report.
#include <unistd.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>

#include "fiber/base/launch_site.h"
#include "fiber/base/worker_resources.h"
#include "fiber/errors.h"

namespace {

constexpr std::array<const char*, 24> kVariables = {"SLURM_JOB_ID",
                                                    "SLURM_NTASKS",
                                                    "SLURM_NPROCS",
                                                    "SLURM_STEP_NUM_TASKS",
                                                    "SLURM_JOB_NUM_NODES",
                                                    "SLURM_NNODES",
                                                    "SLURM_JOB_NODELIST",
                                                    "SLURM_CPUS_ON_NODE",
                                                    "SLURM_JOB_CPUS_PER_NODE",
                                                    "OMPI_COMM_WORLD_RANK",
                                                    "OMPI_COMM_WORLD_SIZE",
                                                    "PMI_RANK",
                                                    "PMI_SIZE",
                                                    "PMIX_RANK",
                                                    "LSB_HOSTS",
                                                    "FIBER_K8S_POD_NAME",
                                                    "FIBER_K8S_POD_UID",
                                                    "FIBER_K8S_ROLE",
                                                    "PBS_NODEFILE",
                                                    "PE_HOSTFILE",
                                                    "HYDRA_HOST_FILE",
                                                    "OMPI_MCA_orte_default_hostfile",
                                                    "PRTE_MCA_prte_default_hostfile",
                                                    "quantity"};

const std::string& hostfile_path() {
  static const std::string path = "/tmp/fibermpi-fuzz-hostfile-" + std::to_string(::getpid());
  return path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::map<std::string, std::string> environment;
  std::string hostfile;
  std::istringstream lines(std::string(reinterpret_cast<const char*>(data), size));
  for (std::string line; std::getline(lines, line);) {
    if (line.size() < 2 || line[1] != '=') {
      hostfile += line + "\n";  // what is no variable is the hostfile's
      continue;
    }
    const size_t index = static_cast<unsigned char>(line[0]) % kVariables.size();
    environment[kVariables[index]] = line.substr(2);
  }
  // A hostfile variable names the file the fuzzer wrote.
  for (const char* name : {"PBS_NODEFILE", "PE_HOSTFILE", "HYDRA_HOST_FILE",
                           "OMPI_MCA_orte_default_hostfile", "PRTE_MCA_prte_default_hostfile"}) {
    if (environment.count(name)) environment[name] = hostfile_path();
  }
  std::ofstream(hostfile_path(), std::ios::binary) << hostfile;
  const fiber::internal::EnvironmentLookup lookup =
      [&](const std::string& name) -> std::optional<std::string> {
    auto found = environment.find(name);
    if (found == environment.end()) return std::nullopt;
    return found->second;
  };
  try {
    const auto site = fiber::internal::detect_launch_site(lookup);
    (void)site.describe();
    (void)site.kind_name();
  } catch (const fiber::Error&) {
  }
  try {
    (void)fiber::internal::parse_slurm_cpus_per_node(environment.count("SLURM_JOB_CPUS_PER_NODE")
                                                         ? environment["SLURM_JOB_CPUS_PER_NODE"]
                                                         : hostfile);
  } catch (const fiber::Error&) {
  }
  try {
    (void)fiber::internal::parse_quantity(
        environment.count("quantity") ? environment["quantity"] : hostfile, "the quantity");
  } catch (const fiber::Error&) {
  }
  return 0;
}
