#include "fiber/base/launch_recipe.h"

namespace fiber::internal {
namespace {

// PMIx's process sensors (file, heartbeat) watch nothing unless a program asks PMIx to monitor
// it, which Open MPI never does; yet Open MPI 5's runtime (PMIx 5.0.11) stops them for every
// client whose connection closes, taking a lock of that client's record, and under load it was
// seen blocked there for good, while its main thread waited for the same client's
// deregistration: the runtime hung, and the program with it, mid-run (about 1 run in 30 of a
// test that starts a process after another on 2 busy cores). With no sensor open, that path
// takes no lock.
constexpr const char* kPmixSensorVariable = "PMIX_MCA_psensor";
constexpr const char* kPmixSensorsOff = "^file,heartbeat";

bool starts_with(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

}  // namespace

std::string_view family_name(MpiFamily family) {
  switch (family) {
    case MpiFamily::kOpenMpi4:
      return "Open MPI 4";
    case MpiFamily::kOpenMpi5:
      return "Open MPI 5";
    case MpiFamily::kMpich:
      return "MPICH";
  }
  return "an unknown MPI";
}

bool family_from_library_version(std::string_view version_text, MpiFamily& family) {
  constexpr std::string_view kOpenMpi = "Open MPI v";
  if (starts_with(version_text, kOpenMpi)) {
    const std::string_view number = version_text.substr(kOpenMpi.size());
    if (starts_with(number, "4.")) {
      family = MpiFamily::kOpenMpi4;
      return true;
    }
    if (starts_with(number, "5.")) {
      family = MpiFamily::kOpenMpi5;
      return true;
    }
    return false;
  }
  if (starts_with(version_text, "MPICH Version:")) {
    family = MpiFamily::kMpich;
    return true;
  }
  return false;
}

std::string recovery_variable(MpiFamily family) {
  switch (family) {
    case MpiFamily::kOpenMpi4:
      return "OMPI_MCA_orte_enable_recovery";
    case MpiFamily::kOpenMpi5:
      return "OMPI_MCA_mpi_ft_enable";
    case MpiFamily::kMpich:
      break;
  }
  return {};
}

std::string recovery_option(MpiFamily family) {
  switch (family) {
    case MpiFamily::kOpenMpi4:
      return "--enable-recovery";
    case MpiFamily::kOpenMpi5:
      return "--with-ft ulfm --prtemca state_base_recoverable 1";
    case MpiFamily::kMpich:
      break;
  }
  return {};
}

std::vector<std::pair<std::string, std::string>> own_runtime_variables(MpiFamily family,
                                                                       bool as_root) {
  std::vector<std::pair<std::string, std::string>> variables;
  // A launcher-less runtime aborts every job when a spawned child dies unless recovery (Open
  // MPI 4.1) or fault tolerance (Open MPI 5) is on.
  if (const std::string recovery = recovery_variable(family); !recovery.empty())
    variables.emplace_back(recovery, "1");
  // Open MPI 5's runtime (PRRTE) also ends every other process of a spawned job when one of
  // them dies, unless that job is "recoverable": without this, a killed worker took the other
  // workers of its spawn batch with it (measured: 2 s instead of 50 ms until its task ran
  // again).
  if (family == MpiFamily::kOpenMpi5) {
    variables.emplace_back("PRTE_MCA_state_base_recoverable", "1");
    variables.emplace_back(kPmixSensorVariable, kPmixSensorsOff);
  }
  if (as_root) {
    for (const std::string& name : root_variables(family)) variables.emplace_back(name, "1");
  }
  return variables;
}

std::vector<std::pair<std::string, std::string>> process_variables(MpiFamily family) {
  if (family == MpiFamily::kMpich) return {{"MPIR_CVAR_CH4_NETMOD", "ofi"}, {"FI_PROVIDER", "tcp"}};
  return {};
}

std::vector<std::pair<std::string, std::string>> mpirun_variables(MpiFamily family) {
  if (family == MpiFamily::kOpenMpi5) return {{kPmixSensorVariable, kPmixSensorsOff}};
  return {};
}

std::vector<std::string> mpirun_options(MpiFamily family, bool as_root) {
  std::vector<std::string> options;
  switch (family) {
    case MpiFamily::kOpenMpi4:
      options = {"--enable-recovery", "--oversubscribe"};
      break;
    case MpiFamily::kOpenMpi5:
      // The second part keeps the other workers of a spawn batch alive when one of them dies.
      // PMIx's "hash" store: with its default (shared memory), the daemon on another host
      // crashed on spawns there in about half the runs (fiber/master/master.cc).
      options = {"--with-ft", "ulfm", "--prtemca", "state_base_recoverable", "1",
                 "--pmixmca", "gds",  "hash",      "--oversubscribe"};
      break;
    case MpiFamily::kMpich:
      // Hydra oversubscribes unasked and needs no root opt-in. Its -disable-auto-cleanup, which
      // would keep a job whose process was killed, signals every process of the job (SIGUSR1)
      // at each end of one, and its mpiexec dies of a write error once a spawned process's
      // proxy has gone: a job ends with its first killed process instead.
      return options;
  }
  if (as_root) options.emplace_back("--allow-run-as-root");
  return options;
}

std::vector<std::string> root_variables(MpiFamily family) {
  switch (family) {
    case MpiFamily::kOpenMpi4:
      return {"OMPI_ALLOW_RUN_AS_ROOT", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"};
    case MpiFamily::kOpenMpi5:
      return {"OMPI_ALLOW_RUN_AS_ROOT", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "PRTE_ALLOW_RUN_AS_ROOT",
              "PRTE_ALLOW_RUN_AS_ROOT_CONFIRM"};
    case MpiFamily::kMpich:
      break;
  }
  return {};
}

}  // namespace fiber::internal
