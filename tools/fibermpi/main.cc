// fibermpi: the command that runs fibermpi programs the right way for where they are (a laptop,
// mpirun, a Slurm allocation, a FiberJob pod) and says what it sees (`fibermpi info`).
#include <signal.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>

#include "fiber/errors.h"
#include "info_command.h"
#include "run_command.h"

int main(int argc, char** argv) {
  // Children are waited for: an ignored SIGCHLD inherited from the caller would make the kernel
  // reap them first.
  ::signal(SIGCHLD, SIG_DFL);
  CLI::App app{"fibermpi: run fibermpi programs and inspect where they run"};
  app.set_version_flag("--version", FIBER_VERSION);
  app.require_subcommand(1);

  fibermpi::RunRequest run_request;
  CLI::App* run = app.add_subcommand(
      "run",
      "Run PROGRAM ARGS...: the program itself on a laptop (it spawns its workers), or N ranks "
      "under the mpirun of the MPI it is linked against (with that MPI's recovery and "
      "oversubscription options), inside a Slurm allocation N defaults to its tasks. Exits with "
      "the program's own status.");
  run->add_option("-n,--np", run_request.ranks, "Ranks of the MPI job (the static world)")
      ->check(CLI::Range(1, 1000000));
  run->add_flag("--dry-run", run_request.dry_run, "Print the command that would run; run nothing");
  run->add_flag("--srun", run_request.srun,
                "Inside a Slurm allocation, start the ranks with srun --mpi=pmix instead of "
                "mpirun (Open MPI 4.1; no spawn, no recovery)");
  // PROGRAM and everything after it belong to the program.
  run->prefix_command();

  fibermpi::InfoRequest info_request;
  CLI::App* info = app.add_subcommand(
      "info",
      "Show the machine (hwloc), the MPI (of PROGRAM, or of this build), the launch site and "
      "the configuration with each value's source");
  info->add_flag("--json", info_request.json, "Print the report as JSON");
  info->add_option("PROGRAM", info_request.program, "A program whose MPI to describe");

  // CLI11 would only say that a subcommand is required.
  const std::string first = argc > 1 ? argv[1] : "";
  if (!first.empty() && first[0] != '-' && first != "run" && first != "info") {
    std::fprintf(stderr, "fibermpi: unknown command '%s' (commands: run, info; see --help)\n",
                 argv[1]);
    return 2;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    // --help and --version end here with 0; a bad option with 2, its message naming it.
    return app.exit(error) == 0 ? 0 : 2;
  }
  try {
    if (run->parsed()) {
      run_request.command = run->remaining();
      return fibermpi::run_program(run_request);
    }
    return fibermpi::print_info(info_request);
  } catch (const fiber::Error& error) {
    std::fprintf(stderr, "fibermpi %s: %s\n", run->parsed() ? "run" : "info", error.what());
    return 2;
  }
}
