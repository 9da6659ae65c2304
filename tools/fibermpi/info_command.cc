#include "info_command.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>

#include "fiber/base/config_file.h"
#include "fiber/base/core_binder.h"
#include "fiber/base/launch_recipe.h"
#include "fiber/base/launch_site.h"
#include "fiber/errors.h"
#include "program_mpi.h"
#include "topology.h"

namespace fibermpi {
namespace {

using fiber::internal::detect_launch_site;
using fiber::internal::LaunchSite;
using nlohmann::json;

std::string host_name() {
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  return name;
}

// The MPI part: of the program, or of this build's own MPI. Errors go into the report.
json describe_mpi(const std::string& program) {
  json mpi;
  try {
    std::optional<ProgramMpi> found;
    MpiLibrary library;
    mpi["of"] = program.empty() ? std::string("this fibermpi build") : program;
    if (!program.empty()) {
      found = find_program_mpi(find_program(program));
      library = found->library;
      mpi["of"] = found->program;
    } else {
      library = probe_library(FIBER_BUILT_LIBMPI);
      try {
        found = mpi_of_library(FIBER_BUILT_LIBMPI, "this fibermpi build");
      } catch (const fiber::Error& error) {
        mpi["mpirun_error"] = error.what();
      }
    }
    mpi["library"] = library.path;
    mpi["version"] = library.version_text;
    mpi["family"] = std::string(fiber::internal::family_name(library.family));
    mpi["ulfm"] = library.has_ulfm;
    mpi["recovery_option"] = fiber::internal::recovery_option(library.family);
    if (found) mpi["mpirun"] = found->mpirun;
  } catch (const fiber::Error& error) {
    mpi["error"] = error.what();
  }
  return mpi;
}

json describe_config() {
  json config;
  const fiber::internal::EnvironmentLookup environment = fiber::internal::process_environment();
  try {
    const fiber::internal::ResolvedConfig resolved = fiber::internal::resolve_config(
        fiber::Config{}, environment, std::filesystem::current_path());
    config["file"] = resolved.file;
    json keys = json::array();
    for (const std::string& key : fiber::internal::config_keys()) {
      keys.push_back({{"key", key},
                      {"value", fiber::internal::config_value_text(resolved.config, key)},
                      {"source", resolved.origin(key)},
                      {"variable", fiber::internal::config_environment_variable(key)}});
    }
    config["keys"] = keys;
  } catch (const fiber::Error& error) {
    config["error"] = error.what();
  }
  config["note"] =
      "what a program sets in its fiber::Config is not visible here; it overrides these";
  return config;
}

void print_text(const json& report) {
  const json& machine = report["machine"];
  std::printf("fibermpi %s\n", report["fibermpi"].get<std::string>().c_str());
  std::printf("\nmachine      %s: %d packages, %d NUMA nodes, %d cores, %d hardware threads\n",
              machine["host"].get<std::string>().c_str(), machine["packages"].get<int>(),
              machine["numa_nodes"].get<int>(), machine["cores"].get<int>(),
              machine["hardware_threads"].get<int>());
  std::printf("             allowed CPUs %s, this process bound to %s\n",
              machine["allowed_cpus"].get<std::string>().c_str(),
              machine["bound_cpus"].get<std::string>().c_str());
  std::string cores;
  for (const json& core : machine["worker_cores"])
    cores += (cores.empty() ? "" : ", ") + core.get<std::string>();
  // The binding the configuration asks for (fiber.yaml, FIBER_BIND), "core" when unreadable.
  std::string bind = "core";
  for (const json& key : report["config"].value("keys", json::array()))
    if (key.value("key", std::string()) == "bind") bind = key.value("value", bind);
  if (bind == "none") {
    std::printf("             spawned workers are not bound (bind: none)\n");
  } else {
    std::printf(
        "             spawned workers bind to the cores of PUs %s, in this order (bind: %s)\n",
        cores.c_str(), bind.c_str());
  }
  const json& mpi = report["mpi"];
  std::printf("\nMPI          (of %s)\n", mpi.value("of", std::string("?")).c_str());
  if (mpi.contains("error")) {
    std::printf("             cannot tell: %s\n", mpi["error"].get<std::string>().c_str());
  } else {
    std::printf("             %s\n", mpi["version"].get<std::string>().c_str());
    std::printf("             library %s\n", mpi["library"].get<std::string>().c_str());
    if (mpi.contains("mpirun"))
      std::printf("             mpirun  %s\n", mpi["mpirun"].get<std::string>().c_str());
    const std::string recovery = mpi["recovery_option"].get<std::string>();
    std::printf("             ULFM %s; fibermpi's recovery under mpirun: %s\n",
                mpi["ulfm"].get<bool>() ? "yes" : "no",
                recovery.empty() ? "none (a killed process ends the job)" : recovery.c_str());
  }
  std::printf("\nlaunch site  %s\n", report["launch"]["site"].get<std::string>().c_str());
  if (report["launch"].contains("other_hosts")) {
    std::printf("             ranks may run on other hosts: %s\n",
                report["launch"]["other_hosts"].get<std::string>().c_str());
  }
  const json& config = report["config"];
  std::printf("\nconfiguration (file: %s)\n", config.value("file", std::string()).empty()
                                                  ? "none"
                                                  : config["file"].get<std::string>().c_str());
  if (config.contains("error")) {
    std::printf("  invalid: %s\n", config["error"].get<std::string>().c_str());
  } else {
    for (const json& key : config["keys"]) {
      std::printf("  %-22s %-16s %s\n", key["key"].get<std::string>().c_str(),
                  key["value"].get<std::string>().c_str(),
                  key["source"].get<std::string>().c_str());
    }
  }
  std::printf("  (%s)\n", config["note"].get<std::string>().c_str());
}

}  // namespace

int print_info(const InfoRequest& request) {
  json report;
  report["fibermpi"] = FIBER_VERSION;
  const TopologySummary topology = read_topology();
  report["machine"] = {{"host", host_name()},
                       {"packages", topology.packages},
                       {"numa_nodes", topology.numa_nodes},
                       {"cores", topology.cores},
                       {"hardware_threads", topology.processing_units},
                       {"allowed_cpus", topology.allowed},
                       {"bound_cpus", topology.bound}};
  // Where spawned workers go with Config::bind "core": one core each, in this order.
  report["machine"]["worker_cores"] = fiber::internal::CoreBinder(true).core_lists();
  report["mpi"] = describe_mpi(request.program);
  const LaunchSite site = detect_launch_site(fiber::internal::process_environment());
  report["launch"] = {{"kind", site.kind_name()}, {"site", site.describe()}};
  if (site.kind == LaunchSite::Kind::kSlurmAllocation) {
    report["launch"]["slurm_job"] = site.slurm_job;
    report["launch"]["slurm_tasks"] = site.slurm_tasks;
  }
  if (!site.other_hosts.empty()) report["launch"]["other_hosts"] = site.other_hosts;
  report["config"] = describe_config();
  if (request.json) {
    std::printf("%s\n", report.dump(2).c_str());
  } else {
    print_text(report);
  }
  const bool failed = report["config"].contains("error") ||
                      (!request.program.empty() && report["mpi"].contains("error"));
  return failed ? 1 : 0;
}

}  // namespace fibermpi
