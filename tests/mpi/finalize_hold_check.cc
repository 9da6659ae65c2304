// A spawned worker that leaves while the run goes on (its Process ended) finalises MPI with a
// fence over its spawn batch, which waits for the siblings still serving in the reserve. Under
// mpirun without recovery, leaving without finalising fails the whole run, so the watchdog over
// that finalize must not fire while the master lives.
//   FIBER_FAULT_FINALIZE_WATCHDOG_S=1 mpirun -n 1 finalize_hold_check
// Runs two Processes (the spawn batch holds more: the rest wait in the reserve), joins them, then
// goes on for three times the watchdog's time. Prints "finalize_hold_check: OK" at the end; the
// run's exit status (checked_run) says whether mpirun took it for a success.
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include "fiber/fiber.h"

void nothing(int) {}

int main(int argc, char** argv) {
  fiber::init(argc, argv);
  std::vector<fiber::Process> processes;
  for (int i = 0; i < 2; ++i) processes.emplace_back(nothing, i);
  for (auto& process : processes) process.start();
  for (auto& process : processes) process.join();
  for (auto& process : processes) {
    if (process.exitcode() != 0) {
      std::printf("finalize_hold_check: %s ended with %d\n", process.name().c_str(),
                  process.exitcode().value_or(-1000));
      return 1;
    }
  }
  std::this_thread::sleep_for(std::chrono::seconds(3));
  std::printf("finalize_hold_check: OK\n");
  return 0;
}
