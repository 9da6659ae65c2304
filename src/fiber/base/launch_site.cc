#include "fiber/base/launch_site.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <optional>
#include <sstream>
#include <vector>

#include "fiber/errors.h"

namespace fiber::internal {
namespace {

// A rank or size variable: its number, nothing when unset or not a number.
std::optional<int> number_in(const EnvironmentLookup& environment, const char* name) {
  const std::optional<std::string> text = environment(name);
  if (!text || text->empty()) return std::nullopt;
  int value = 0;
  const auto [end, error] = std::from_chars(text->data(), text->data() + text->size(), value);
  if (error != std::errc() || end != text->data() + text->size()) return std::nullopt;
  return value;
}

int task_count(const std::string& name, const std::string& text) {
  // Slurm writes "4" or, for heterogeneous jobs, "4(x2)"; the leading number is the count.
  int value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end == text.data() || value < 1) {
    throw fiber::UsageError(name + "='" + text + "' is not a whole number of at least 1");
  }
  return value;
}

std::string this_host_name() {
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  return name;
}

bool is_this_host(const std::string& name) {
  const std::string host = this_host_name();
  return name == "localhost" || name == "127.0.0.1" || name == "::1" || name == host ||
         name == host.substr(0, host.find('.'));
}

// The first host in `hosts` that is not this one, "" if none.
std::string first_other_host(const std::vector<std::string>& hosts) {
  for (const std::string& host : hosts)
    if (!host.empty() && !is_this_host(host)) return host;
  return {};
}

// A hostfile names one host per line, first word, options after it ("node-b slots=4", "node-b:4",
// "user@node-b"); '#' starts a comment; a line of Open MPI's starting with '^' excludes a host.
// Empty optional: it cannot be read.
std::optional<std::vector<std::string>> hostfile_hosts(const std::string& path) {
  std::ifstream file(path);
  if (!file) return std::nullopt;
  std::vector<std::string> hosts;
  for (std::string line; std::getline(file, line);) {
    line = line.substr(0, line.find('#'));
    std::istringstream words(line);
    std::string host;
    if (!(words >> host) || host.front() == '^') continue;
    host = host.substr(host.find('@') + 1);
    hosts.push_back(host.substr(0, host.find(':')));
  }
  return hosts;
}

// A host list ("node-a,node-b:4"): each entry's host, its slot count left off.
std::vector<std::string> host_list_hosts(const std::string& list) {
  std::vector<std::string> hosts;
  std::istringstream entries(list);
  for (std::string entry; std::getline(entries, entry, ',');)
    hosts.push_back(entry.substr(0, entry.find(':')));
  return hosts;
}

// What of a launcher's own settings may put ranks elsewhere: the hostfile and host-list
// variables of Open MPI 4.1 (orte) and 5 (prte, also read with the OMPI_MCA_ prefix), MPICH's
// hydra, and the host lists PBS, Grid Engine and LSF give the launchers that read them. For
// whichever MPI the program uses: a setting of another MPI's only moves the report.
std::string other_hosts_of_mpirun(const EnvironmentLookup& environment) {
  for (const char* name :
       {"OMPI_MCA_orte_default_hostfile", "PRTE_MCA_prte_default_hostfile",
        "OMPI_MCA_prte_default_hostfile", "HYDRA_HOST_FILE", "PBS_NODEFILE", "PE_HOSTFILE"}) {
    const std::string path = environment(name).value_or("");
    if (path.empty() || path == "none") continue;
    const auto hosts = hostfile_hosts(path);
    if (!hosts) return "the hostfile " + path + " of " + name + ", which cannot be read here";
    if (const std::string other = first_other_host(*hosts); !other.empty())
      return "the hostfile " + path + " of " + name + ", which names " + other;
  }
  for (const char* name : {"OMPI_MCA_orte_default_dash_host", "PRTE_MCA_prte_default_dash_host",
                           "OMPI_MCA_prte_default_dash_host"}) {
    const std::string list = environment(name).value_or("");
    if (const std::string other = first_other_host(host_list_hosts(list)); !other.empty())
      return "the hosts of " + std::string(name) + ", which name " + other;
  }
  std::istringstream lsf_hosts(environment("LSB_HOSTS").value_or(""));
  for (std::string host; lsf_hosts >> host;)
    if (!is_this_host(host)) return "the hosts of LSB_HOSTS, which name " + host;
  return {};
}

}  // namespace

bool started_by_launcher(const EnvironmentLookup& environment) {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK"})
    if (const auto value = environment(name); value && !value->empty()) return true;
  return false;
}

std::optional<int> launcher_rank(const EnvironmentLookup& environment) {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"})
    if (const auto value = environment(name); value && !value->empty())
      return number_in(environment, name);
  return std::nullopt;
}

int launcher_world_size(const EnvironmentLookup& environment) {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"})
    if (const auto size = number_in(environment, name)) return std::max(0, *size);
  // srun with PMIx sets no size variable of the MPI's own, but its step's task count.
  if (const auto value = environment("PMIX_RANK"); value && !value->empty())
    return std::max(0, number_in(environment, "SLURM_STEP_NUM_TASKS").value_or(0));
  return 0;
}

std::string fiberjob_pod_identity(const EnvironmentLookup& environment) {
  const std::string pod = environment("FIBER_K8S_POD_NAME").value_or("");
  const std::string uid = environment("FIBER_K8S_POD_UID").value_or("");
  if (pod.empty() || environment("FIBER_K8S_ROLE").value_or("").empty()) return {};
  return uid.empty() ? pod : pod + "/" + uid;
}

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

LaunchSite detect_launch_site(const EnvironmentLookup& environment) {
  LaunchSite site;
  auto value = [&](const char* name) { return environment(name).value_or(""); };
  site.under_launcher = started_by_launcher(environment);
  site.rank = launcher_rank(environment);
  site.world_size = launcher_world_size(environment);
  if (const std::string role = value("FIBER_K8S_ROLE"); !role.empty()) {
    site.kind = LaunchSite::Kind::kFiberJobPod;
    site.pod_role = role;
    site.fiberjob = value("FIBER_K8S_NAMESPACE") + "/" + value("FIBER_K8S_JOB");
  } else if (site.under_launcher) {
    site.kind = LaunchSite::Kind::kLauncher;
  }
  site.slurm_job = value("SLURM_JOB_ID");
  if (site.slurm_job.empty()) {
    if (site.kind == LaunchSite::Kind::kNone) site.other_hosts = other_hosts_of_mpirun(environment);
    return site;
  }
  if (site.kind == LaunchSite::Kind::kNone) site.kind = LaunchSite::Kind::kSlurmAllocation;
  site.slurm_nodes = value("SLURM_JOB_NODELIST");
  for (const char* name : {"SLURM_JOB_NUM_NODES", "SLURM_NNODES"}) {
    const std::string nodes = value(name);
    if (nodes.empty()) continue;
    if (task_count(name, nodes) > 1)
      site.other_hosts = "Slurm allocation " + site.slurm_job + " of " + nodes + " nodes";
    break;
  }
  if (value("SLURM_JOB_NUM_NODES") == "1")
    site.slurm_only_this_node = is_this_host(site.slurm_nodes);
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

}  // namespace fiber::internal
