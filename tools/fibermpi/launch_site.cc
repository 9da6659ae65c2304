#include "launch_site.h"

#include <unistd.h>

#include <charconv>

#include "fiber/errors.h"

namespace fibermpi {
namespace {

int task_count(const std::string& name, const std::string& text) {
  // Slurm writes "4" or, for heterogeneous jobs, "4(x2)"; the leading number is the count.
  int value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end == text.data() || value < 1) {
    throw fiber::UsageError(name + "='" + text + "' is not a whole number of at least 1");
  }
  return value;
}

std::string host_name() {
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  return name;
}

}  // namespace

std::string LaunchSite::describe() const {
  switch (kind) {
    case Kind::kNone:
      return "none (no launcher, no Slurm allocation, no FiberJob)";
    case Kind::kLauncher:
      return "already under an MPI launcher (mpirun or srun)";
    case Kind::kSlurmAllocation:
      return "Slurm allocation " + slurm_job + " (" +
             (slurm_tasks > 0 ? std::to_string(slurm_tasks) + " tasks" : "no task count") +
             (slurm_nodes.empty() ? "" : " on " + slurm_nodes) + ")";
    case Kind::kFiberJobPod:
      return "FiberJob " + fiberjob + ", " + pod_role + " pod";
  }
  return {};
}

std::string LaunchSite::kind_name() const {
  switch (kind) {
    case Kind::kNone:
      return "none";
    case Kind::kLauncher:
      return "launcher";
    case Kind::kSlurmAllocation:
      return "slurm";
    case Kind::kFiberJobPod:
      return "fiberjob";
  }
  return {};
}

LaunchSite detect_launch_site(const fiber::detail::EnvironmentLookup& environment) {
  LaunchSite site;
  auto value = [&](const char* name) { return environment(name).value_or(""); };
  if (const std::string role = value("FIBER_K8S_ROLE"); !role.empty()) {
    site.kind = LaunchSite::Kind::kFiberJobPod;
    site.pod_role = role;
    site.fiberjob = value("FIBER_K8S_NAMESPACE") + "/" + value("FIBER_K8S_JOB");
    return site;
  }
  // The variables a rank of mpirun (Open MPI), of a PMIx launcher or of a PMI one carries.
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK"}) {
    if (!value(name).empty()) {
      site.kind = LaunchSite::Kind::kLauncher;
      return site;
    }
  }
  site.slurm_job = value("SLURM_JOB_ID");
  if (site.slurm_job.empty()) return site;
  site.kind = LaunchSite::Kind::kSlurmAllocation;
  site.slurm_nodes = value("SLURM_JOB_NODELIST");
  if (value("SLURM_JOB_NUM_NODES") == "1") {
    const std::string host = host_name();
    site.slurm_only_this_node = site.slurm_nodes == "localhost" || site.slurm_nodes == host ||
                                site.slurm_nodes == host.substr(0, host.find('.'));
  }
  if (const std::string cpus = value("SLURM_CPUS_ON_NODE"); !cpus.empty()) {
    site.slurm_cpus_on_node = task_count("SLURM_CPUS_ON_NODE", cpus);
  } else if (const std::string per_node = value("SLURM_JOB_CPUS_PER_NODE");
             site.slurm_only_this_node && !per_node.empty()) {
    site.slurm_cpus_on_node = task_count("SLURM_JOB_CPUS_PER_NODE", per_node);
  }
  for (const char* name : {"SLURM_NTASKS", "SLURM_NPROCS"}) {
    if (const std::string tasks = value(name); !tasks.empty()) {
      site.slurm_tasks = task_count(name, tasks);
      break;
    }
  }
  return site;
}

}  // namespace fibermpi
