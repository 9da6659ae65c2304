// The environment a spawner hands its children on their command line (MPICH, whose hydra ignores
// the "env" info key): the words made, the variables set, and the program's own arguments left
// exactly as they were, including ones that look like the carrier but are not.
#include "fiber/base/spawned_environment.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

namespace fiber::internal {
namespace {

// A mutable argv over `words` (with the null pointer after the last), as main() gets it.
struct Argv {
  explicit Argv(std::vector<std::string> words) : storage(std::move(words)) {
    for (auto& word : storage) pointers.push_back(word.data());
    pointers.push_back(nullptr);
    argc = static_cast<int>(storage.size());
    argv = pointers.data();
  }
  std::vector<std::string> seen() const { return {argv, argv + argc}; }
  std::vector<std::string> storage;
  std::vector<char*> pointers;
  int argc = 0;
  char** argv = nullptr;
};

TEST(SpawnedEnvironment, EntriesBecomeCarrierWordsInOrder) {
  EXPECT_EQ(environment_as_arguments({{"FIBER_WORKER", "1"}, {"A", "x=y z"}}),
            (std::vector<std::string>{kEnvironmentArgument, "FIBER_WORKER=1", kEnvironmentArgument,
                                      "A=x=y z"}));
  EXPECT_TRUE(environment_as_arguments({}).empty());
}

TEST(SpawnedEnvironment, TakenEntriesAreSetAndRemovedLeavingTheProgramsArguments) {
  ::unsetenv("FIBER_SPAWNED_ENV_TEST_A");
  ::setenv("FIBER_SPAWNED_ENV_TEST_B", "old", 1);
  std::vector<std::string> words = {"/bin/prog"};
  for (auto& word : environment_as_arguments(
           {{"FIBER_SPAWNED_ENV_TEST_A", "a=1"}, {"FIBER_SPAWNED_ENV_TEST_B", ""}}))
    words.push_back(word);
  words.insert(words.end(), {"--steps", "7", kEnvironmentArgument, "LATE=1"});
  Argv args(words);
  take_environment_arguments(args.argc, args.argv);
  EXPECT_EQ(args.seen(), (std::vector<std::string>{"/bin/prog", "--steps", "7",
                                                   kEnvironmentArgument, "LATE=1"}));
  EXPECT_EQ(args.argv[args.argc], nullptr);
  EXPECT_STREQ(std::getenv("FIBER_SPAWNED_ENV_TEST_A"), "a=1");
  EXPECT_STREQ(std::getenv("FIBER_SPAWNED_ENV_TEST_B"), "");
  // Only leading entries are the spawner's: one after the program's arguments is the program's.
  EXPECT_EQ(std::getenv("LATE"), nullptr);
}

TEST(SpawnedEnvironment, ArgumentsWithoutCarrierOrMalformedEntriesStayUntouched) {
  Argv plain({"/bin/prog", "x"});
  take_environment_arguments(plain.argc, plain.argv);
  EXPECT_EQ(plain.seen(), (std::vector<std::string>{"/bin/prog", "x"}));

  Argv no_value({"/bin/prog", kEnvironmentArgument});
  take_environment_arguments(no_value.argc, no_value.argv);
  EXPECT_EQ(no_value.seen(), (std::vector<std::string>{"/bin/prog", kEnvironmentArgument}));

  Argv malformed({"/bin/prog", kEnvironmentArgument, "=nameless", "y"});
  take_environment_arguments(malformed.argc, malformed.argv);
  EXPECT_EQ(malformed.seen(),
            (std::vector<std::string>{"/bin/prog", kEnvironmentArgument, "=nameless", "y"}));
}

}  // namespace
}  // namespace fiber::internal
