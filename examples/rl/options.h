// The integer `--name VALUE` options of the RL example programs, parsed without exceptions.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace rl {

// One option: `--name VALUE`, VALUE an integer in [min, max].
struct IntOption {
  std::string_view name;  // without the leading "--"
  std::int64_t* value;    // holds the default, receives the value given
  std::int64_t min;
  std::int64_t max;
  std::string_view help;
};

// What parse_options found.
struct ParseResult {
  enum class Status { kOk, kHelp, kError };
  Status status = Status::kOk;
  std::string error;  // for kError: names the argument at fault
};

// Reads `--name VALUE` pairs (and `--help`) from argv[1..argc). An unknown option, a missing or
// malformed value, or one out of range gives kError with a message naming it.
ParseResult parse_options(int argc, char** argv, std::span<const IntOption> options);

// A usage text for `command` (how the program is started): one line per option with its help,
// range and default.
std::string usage(std::string_view command, std::span<const IntOption> options);

// Ends the handling of a parse that did not give kOk: when `print` (on rank 0 of an MPI job),
// writes "program: error" and `usage_text` to stderr; returns the exit status to end with, 0
// after --help and 2 after an error.
int reject(const ParseResult& result, std::string_view program, std::string_view usage_text,
           bool print);

}  // namespace rl
