// The command-line options of the RL programs: values, defaults, and errors that name the
// argument at fault.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "rl/options.h"

namespace {

using Status = rl::ParseResult::Status;

// Parses `args` (program name first) into iterations and seed.
struct Parsed {
  rl::ParseResult result;
  std::int64_t iterations = 10;
  std::int64_t seed = 0;
};
Parsed parse(std::vector<std::string> args) {
  Parsed parsed;
  const rl::IntOption options[] = {
      {"iterations", &parsed.iterations, 1, 1000, "iterations"},
      {"seed", &parsed.seed, 0, INT64_MAX, "seed"},
  };
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  parsed.result = rl::parse_options(static_cast<int>(argv.size()), argv.data(), options);
  return parsed;
}

TEST(Options, KeepsDefaultsAndReadsGivenValues) {
  const Parsed none = parse({"prog"});
  EXPECT_EQ(none.result.status, Status::kOk);
  EXPECT_EQ(none.iterations, 10);
  const Parsed some = parse({"prog", "--seed", "42", "--iterations", "7"});
  EXPECT_EQ(some.result.status, Status::kOk);
  EXPECT_EQ(some.iterations, 7);
  EXPECT_EQ(some.seed, 42);
}

TEST(Options, ErrorsNameTheArgument) {
  const auto error = [](std::vector<std::string> args) {
    const Parsed parsed = parse(std::move(args));
    EXPECT_EQ(parsed.result.status, Status::kError);
    return parsed.result.error;
  };
  EXPECT_EQ(error({"prog", "--iterations", "x"}), "--iterations: 'x' is not an integer");
  EXPECT_EQ(error({"prog", "--iterations", "5x"}), "--iterations: '5x' is not an integer");
  EXPECT_EQ(error({"prog", "--iterations", "0"}), "--iterations: 0 is outside [1, 1000]");
  EXPECT_EQ(error({"prog", "--seed"}), "--seed needs a value");
  EXPECT_EQ(error({"prog", "--speed", "1"}), "unknown option --speed");
  EXPECT_EQ(error({"prog", "7"}), "unexpected argument '7'");
  EXPECT_EQ(error({"prog", "--seed", "99999999999999999999"}),
            "--seed: '99999999999999999999' is not an integer");
}

TEST(Options, HelpIsNotAnError) {
  EXPECT_EQ(parse({"prog", "--help"}).result.status, Status::kHelp);
  EXPECT_EQ(parse({"prog", "-h"}).result.status, Status::kHelp);
}

TEST(Options, UsageListsEveryOptionWithItsRangeAndDefault) {
  std::int64_t epochs = 50;
  const rl::IntOption options[] = {{"epochs", &epochs, 1, 900, "epochs at most"}};
  EXPECT_EQ(rl::usage("prog", options),
            "usage: prog [options]\n  --epochs N  epochs at most (1..900, default 50)\n");
}

TEST(Options, RejectEndsWithZeroAfterHelpAndTwoAfterAnError) {
  EXPECT_EQ(rl::reject(parse({"prog", "--help"}).result, "prog", "usage\n", false), 0);
  EXPECT_EQ(rl::reject(parse({"prog", "--bad", "1"}).result, "prog", "usage\n", false), 2);
}

}  // namespace
