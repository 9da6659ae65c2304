// Measuring helpers shared by the benchmark programs.
#pragma once

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace fiber::bench {

/// Runs a benchmark's `body(argc, argv)`. A failure (a spawn stuck in Open MPI reported as
/// fiber::SpawnError, a worker lost for good...) is reported as a JSON row of its own,
/// {"bench": name, "error": what}, and the exit status says so; scripts/bench goes on with the
/// next benchmark and lists the failures.
template <class Body>
int run_reporting_failures(const char* name, Body body, int argc, char** argv) {
  try {
    return body(argc, argv);
  } catch (const std::exception& e) {
    std::string text = e.what();
    for (char& c : text)
      if (c == '"' || c == '\\' || c == '\n') c = ' ';
    std::printf("{\"bench\":\"%s\",\"error\":\"%s\"}\n", name, text.c_str());
    std::fflush(stdout);
    std::fprintf(stderr, "%s failed: %s\n", name, e.what());
    return 1;
  }
}

inline double seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

/// True under a launcher that started several ranks (mpirun -n 2 and up): the pools' workers are
/// then the static world's ranks, not spawned processes.
inline bool in_static_world() {
  const char* size = std::getenv("OMPI_COMM_WORLD_SIZE");
  return size && std::atoi(size) > 1;
}

/// "fibermpi static" or "fibermpi spawned", the "impl" of a benchmark row (in_static_world).
inline std::string fibermpi_impl() {
  return in_static_world() ? "fibermpi static" : "fibermpi spawned";
}

/// How long each of `count` calls of `call(i)` took, in microseconds, after `warm_up` untimed
/// ones.
template <class Call>
std::vector<double> time_calls_us(int count, int warm_up, Call&& call) {
  for (int i = 0; i < warm_up; ++i) call(i);
  std::vector<double> us;
  us.reserve(static_cast<size_t>(std::max(0, count)));
  for (int i = 0; i < count; ++i) {
    const auto start = std::chrono::steady_clock::now();
    call(i);
    us.push_back(seconds(std::chrono::steady_clock::now() - start) * 1e6);
  }
  return us;
}

inline double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

inline double percentile(std::vector<double> values, double p) {
  std::sort(values.begin(), values.end());
  return values[std::min(values.size() - 1,
                         static_cast<size_t>(p * static_cast<double>(values.size())))];
}

/// utime + stime of a process in seconds, from /proc.
inline double cpu_seconds_of(int pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(stat, line);
  std::istringstream fields(line.substr(line.rfind(')') + 2));
  std::string skip;
  for (int i = 0; i < 11; ++i) fields >> skip;
  double utime = 0, stime = 0;
  fields >> utime >> stime;
  return (utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

inline double own_cpu_seconds() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1e-6;
}

/// A number from /proc/<pid>/status ("VmRSS", "VmHWM" in kB, "Threads"), or 0 when absent.
inline double status_value(int pid, const std::string& field) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string key;
  while (status >> key) {
    if (key == field + ":") {
      double value = 0;
      status >> value;
      return value;
    }
    std::string rest;
    std::getline(status, rest);
  }
  return 0;
}

/// Resident set size of a process in MB (VmRSS).
inline double rss_mb_of(int pid) { return status_value(pid, "VmRSS") / 1024.0; }

}  // namespace fiber::bench
