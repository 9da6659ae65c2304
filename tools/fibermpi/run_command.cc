#include "run_command.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "fiber/base/exit_status_report.h"
#include "fiber/base/launch_recipe.h"
#include "fiber/base/launch_site.h"
#include "fiber/errors.h"
#include "program_mpi.h"
#include "topology.h"

namespace fibermpi {
namespace {

using fiber::UsageError;
using fiber::internal::detect_launch_site;
using fiber::internal::LaunchSite;
using fiber::internal::MpiFamily;

std::string shell_quoted(const std::string& word) {
  if (!word.empty() && word.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                              "0123456789_-+=/.,:@%^") == std::string::npos)
    return word;
  std::string quoted = "'";
  for (char c : word) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

void print_command(const std::vector<std::pair<std::string, std::string>>& environment,
                   const std::vector<std::string>& words) {
  std::string line;
  const char* path = std::getenv("PATH");
  const std::string rest_of_path = path && *path ? std::string(":") + path : "";
  for (const auto& [name, value] : environment) {
    // PATH is the launcher's folder before the user's own: said so rather than spelled out.
    const bool prepends = name == "PATH" && !rest_of_path.empty() &&
                          value.size() > rest_of_path.size() && value.ends_with(rest_of_path);
    line += prepends ? "PATH=" + shell_quoted(value.substr(0, value.size() - rest_of_path.size())) +
                           ":\"$PATH\" "
                     : name + "=" + shell_quoted(value) + " ";
  }
  for (const auto& word : words) line += shell_quoted(word) + " ";
  if (!line.empty()) line.pop_back();
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

[[noreturn]] void run_directly(std::vector<std::string> words) {
  std::vector<char*> argv;
  for (auto& word : words) argv.push_back(word.data());
  argv.push_back(nullptr);
  std::fflush(nullptr);
  ::execv(argv[0], argv.data());
  std::fprintf(stderr, "fibermpi run: cannot start %s: %s\n", argv[0], std::strerror(errno));
  std::_Exit(127);
}

std::string temporary_directory() {
  const char* tmpdir = std::getenv("TMPDIR");
  if (tmpdir && *tmpdir) return tmpdir;
  return ::access("/tmp", W_OK | X_OK) == 0 ? "/tmp" : "/dev/shm";
}

// Where the program's master leaves its exit status for this command to read, and what a
// missing report means.
struct ReportPlace {
  std::string directory;
  /// In the working folder, for ranks on other hosts to reach (who must be given the variable).
  bool shared = false;
  fiber::internal::ExitReportExpectation expectation;
};

ReportPlace report_place(const LaunchSite& site, const std::string& program) {
  ReportPlace place;
  place.directory = temporary_directory();
  if (!site.other_hosts.empty()) {
    // Rank 0 may start on another host, in this same working folder: clusters share it, where
    // they share no /tmp.
    place.expectation.expected = false;
    char here[4096];
    if (::getcwd(here, sizeof here) && ::access(here, W_OK | X_OK) == 0) {
      place.directory = here;
      place.shared = true;
      place.expectation.why_missing = "its rank 0 may have run on another host (" +
                                      site.other_hosts + "), which does not share this folder " +
                                      place.directory;
    } else {
      place.expectation.why_missing = "its rank 0 may have run on another host (" +
                                      site.other_hosts +
                                      "), and the working folder cannot hold the report";
    }
  }
  if (!runs_fibermpi(program)) {
    place.expectation.expected = false;
    place.expectation.why_missing =
        "it is not linked with fibermpi, whose master reports it; mpirun's own status may hide a "
        "failure under recovery";
  }
  return place;
}

}  // namespace

int run_program(const RunRequest& request) {
  if (request.command.empty())
    throw UsageError("no PROGRAM given: fibermpi run [-n N] PROGRAM [ARGS...]");
  std::vector<std::string> program_words = request.command;
  program_words.front() = find_program(program_words.front());
  const std::string& program = program_words.front();
  const LaunchSite site = detect_launch_site(fiber::internal::process_environment());

  const bool placed_elsewhere =
      site.kind == LaunchSite::Kind::kLauncher || site.kind == LaunchSite::Kind::kFiberJobPod;
  if (placed_elsewhere && request.ranks > 0) {
    throw UsageError("-n " + std::to_string(request.ranks) + ": this runs " + site.describe() +
                     ", which decides the ranks; run without -n");
  }
  if (request.srun && site.kind != LaunchSite::Kind::kSlurmAllocation) {
    throw UsageError("--srun runs the ranks as a step of a Slurm allocation, and this runs " +
                     site.describe() + " (use salloc or sbatch)");
  }
  if (placed_elsewhere || (site.kind == LaunchSite::Kind::kNone && request.ranks == 0)) {
    if (request.dry_run) {
      print_command({}, program_words);
      return 0;
    }
    run_directly(program_words);
  }

  int ranks = request.ranks;
  const bool in_slurm = site.kind == LaunchSite::Kind::kSlurmAllocation;
  if (in_slurm) {
    if (ranks == 0) ranks = site.slurm_tasks;
    if (ranks == 0) {
      throw UsageError(
          "-n is needed: " + site.describe() +
          " names no task count (SLURM_NTASKS); ask for tasks with -n of salloc/sbatch");
    }
    if (site.slurm_tasks > 0 && ranks > site.slurm_tasks) {
      throw UsageError("-n " + std::to_string(ranks) + " asks for more ranks than " +
                       site.describe() + " has; ask Slurm for more tasks (salloc/sbatch -n)");
    }
  }

  const ProgramMpi mpi = find_program_mpi(program);
  if (request.srun && mpi.library.family == MpiFamily::kMpich) {
    throw UsageError("--srun: " + program + " is built against " + mpi.library.version_text +
                     ", which fibermpi starts with its own mpiexec (hydra; inside an allocation "
                     "it places the ranks with Slurm): run it without --srun");
  }
  if (request.srun) {
    if (mpi.library.family == MpiFamily::kOpenMpi5) {
      throw UsageError("--srun: " + program + " is built against " + mpi.library.version_text +
                       ", whose processes started by srun --mpi=pmix fail in MPI_Init beyond 2 "
                       "ranks under this Slurm's PMIx; run it without --srun (mpirun inside the "
                       "allocation), or build it against Open MPI 4.1");
    }
    std::vector<std::string> words = {"srun", "--mpi=pmix", "-n", std::to_string(ranks)};
    words.insert(words.end(), program_words.begin(), program_words.end());
    if (request.dry_run) {
      print_command({}, words);
      return 0;
    }
    const ReportPlace place = report_place(site, program);
    return fiber::internal::run_reporting_exit_status(words, place.directory, program,
                                                      place.expectation);
  }
  std::vector<std::string> words = {mpi.mpirun};
  for (std::string& option :
       fiber::internal::mpirun_options(mpi.library.family, ::geteuid() == 0)) {
    // Inside an allocation the ranks go where Slurm gave room, never beyond it.
    if (in_slurm && option == "--oversubscribe") continue;
    words.push_back(std::move(option));
  }
  // A node that offers Slurm more CPUs than it has (an overcommitting configuration, a test
  // node), or an allocation of more tasks than CPUs (--overcommit), has mpirun bind more ranks
  // here than there are processing units, which it refuses: the ranks then run unbound, as they
  // do when oversubscribing outside Slurm.
  if (in_slurm && mpi.library.family != MpiFamily::kMpich) {
    const int here = read_topology().processing_units;
    if (site.slurm_cpus_on_node > here || (site.slurm_only_this_node && ranks > here))
      words.insert(words.end(), {"--bind-to", "none"});
  }
  // Open MPI's mpirun gives ranks on other hosts only the variables it is told to (and its
  // own); hydra passes on the whole environment.
  const ReportPlace place = report_place(site, program);
  if (place.shared && mpi.library.family != MpiFamily::kMpich)
    words.insert(words.end(), {"-x", fiber::internal::kExitStatusFileVariable});
  words.insert(words.end(), {"-n", std::to_string(ranks)});
  words.insert(words.end(), program_words.begin(), program_words.end());

  std::vector<std::pair<std::string, std::string>> environment = mpi.environment;
  for (const auto& [name, value] : fiber::internal::mpirun_variables(mpi.library.family)) {
    if (!std::getenv(name.c_str())) environment.emplace_back(name, value);
  }
  if (request.dry_run) {
    print_command(environment, words);
    return 0;
  }
  for (const auto& [name, value] : environment) ::setenv(name.c_str(), value.c_str(), 1);
  return fiber::internal::run_reporting_exit_status(words, place.directory, program,
                                                    place.expectation);
}

}  // namespace fibermpi
