// The one answer to "where does this process run": launcher, rank and world, Slurm allocation,
// FiberJob pod, read from an environment given as a table.
#include "fiber/base/launch_site.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "fiber/errors.h"

namespace fiber::internal {
namespace {

EnvironmentLookup table(std::map<std::string, std::string> variables) {
  return [variables = std::move(variables)](const std::string& name) -> std::optional<std::string> {
    const auto found = variables.find(name);
    if (found == variables.end()) return std::nullopt;
    return found->second;
  };
}

TEST(LaunchSite, AProgramStartedAloneIsUnderNoLauncher) {
  const LaunchSite site = detect_launch_site(table({}));
  EXPECT_EQ(site.kind, LaunchSite::Kind::kNone);
  EXPECT_FALSE(site.under_launcher);
  EXPECT_FALSE(site.rank.has_value());
  EXPECT_EQ(site.world_size, 0);
  EXPECT_EQ(site.other_hosts, "");
}

TEST(LaunchSite, OpenMpiPmixAndPmiRanksAreLaunched) {
  const auto open_mpi = table({{"OMPI_COMM_WORLD_SIZE", "4"}, {"OMPI_COMM_WORLD_RANK", "2"}});
  EXPECT_TRUE(started_by_launcher(open_mpi));
  EXPECT_EQ(launcher_rank(open_mpi), 2);
  EXPECT_EQ(launcher_world_size(open_mpi), 4);
  const auto hydra = table({{"PMI_RANK", "0"}, {"PMI_SIZE", "3"}});
  EXPECT_TRUE(started_by_launcher(hydra));
  EXPECT_EQ(launcher_rank(hydra), 0);
  EXPECT_EQ(launcher_world_size(hydra), 3);
  // srun with PMIx: no size of the MPI's own, the step's task count instead.
  const auto srun = table({{"PMIX_RANK", "1"}, {"SLURM_STEP_NUM_TASKS", "8"}});
  EXPECT_EQ(launcher_rank(srun), 1);
  EXPECT_EQ(launcher_world_size(srun), 8);
  EXPECT_EQ(detect_launch_site(srun).kind, LaunchSite::Kind::kLauncher);
  // A rank variable that is not a number: launched, rank unknown.
  const auto odd = table({{"PMIX_RANK", "x"}});
  EXPECT_TRUE(started_by_launcher(odd));
  EXPECT_FALSE(launcher_rank(odd).has_value());
}

TEST(LaunchSite, RanksOfALauncherInsideAnAllocationKeepTheAllocationsFacts) {
  const LaunchSite site = detect_launch_site(table({{"OMPI_COMM_WORLD_SIZE", "4"},
                                                    {"OMPI_COMM_WORLD_RANK", "0"},
                                                    {"SLURM_JOB_ID", "77"},
                                                    {"SLURM_NTASKS", "4"},
                                                    {"SLURM_CPUS_ON_NODE", "8"}}));
  EXPECT_EQ(site.kind, LaunchSite::Kind::kLauncher);
  EXPECT_EQ(site.slurm_job, "77");
  EXPECT_EQ(site.slurm_tasks, 4);
  EXPECT_EQ(site.slurm_cpus_on_node, 8);
  EXPECT_EQ(site.world_size, 4);
}

TEST(LaunchSite, AFiberJobPodIsAPodEvenUnderItsMpirun) {
  const LaunchSite site = detect_launch_site(table({{"FIBER_K8S_ROLE", "launcher"},
                                                    {"FIBER_K8S_NAMESPACE", "team"},
                                                    {"FIBER_K8S_JOB", "es"},
                                                    {"OMPI_COMM_WORLD_SIZE", "1"},
                                                    {"OMPI_COMM_WORLD_RANK", "0"}}));
  EXPECT_EQ(site.kind, LaunchSite::Kind::kFiberJobPod);
  EXPECT_EQ(site.describe(), "FiberJob team/es, launcher pod");
  EXPECT_TRUE(site.under_launcher);
  EXPECT_EQ(site.rank, 0);
}

TEST(LaunchSite, AFiberJobPodsIdentityIsItsNameAndUid) {
  EXPECT_EQ(fiberjob_pod_identity(table({{"FIBER_K8S_ROLE", "worker"},
                                         {"FIBER_K8S_POD_NAME", "es-worker-3"},
                                         {"FIBER_K8S_POD_UID", "0f3a"}})),
            "es-worker-3/0f3a");
  EXPECT_EQ(fiberjob_pod_identity(
                table({{"FIBER_K8S_ROLE", "worker"}, {"FIBER_K8S_POD_NAME", "es-worker-3"}})),
            "es-worker-3");
  // A pod name without the FiberJob's role is no FiberJob pod.
  EXPECT_EQ(fiberjob_pod_identity(table({{"FIBER_K8S_POD_NAME", "es-worker-3"}})), "");
}

TEST(LaunchSite, AnAllocationWithoutALauncher) {
  const LaunchSite site = detect_launch_site(table({{"SLURM_JOB_ID", "12"},
                                                    {"SLURM_NPROCS", "6"},
                                                    {"SLURM_JOB_NUM_NODES", "2"},
                                                    {"SLURM_JOB_NODELIST", "node-[1-2]"}}));
  EXPECT_EQ(site.kind, LaunchSite::Kind::kSlurmAllocation);
  EXPECT_EQ(site.slurm_tasks, 6);
  EXPECT_EQ(site.other_hosts, "Slurm allocation 12 of 2 nodes");
  EXPECT_EQ(site.describe(), "Slurm allocation 12 (6 tasks on node-[1-2])");
}

TEST(LaunchSite, ASlurmCountThatIsNotANumberIsNamed) {
  try {
    detect_launch_site(table({{"SLURM_JOB_ID", "12"}, {"SLURM_NTASKS", "four"}}));
    FAIL() << "no error";
  } catch (const UsageError& error) {
    EXPECT_STREQ(error.what(), "SLURM_NTASKS='four' is not a whole number of at least 1");
  }
}

}  // namespace
}  // namespace fiber::internal
