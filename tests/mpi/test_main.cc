// Entry point of the multi-process test programs: fiber::init first, so the spawned copies of the
// test binary become workers instead of running the tests again. A test run that runs no test, or
// whose --gtest_filter names a test the program does not have, fails: a renamed test must not
// pass unnoticed as "0 tests".
#include <fnmatch.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "fiber/fiber.h"
#include "test_support.h"

namespace {

// The patterns a --gtest_filter selects tests with: those before its '-' (the ones after it
// exclude tests).
std::vector<std::string> selecting_patterns(const std::string& filter) {
  std::vector<std::string> patterns;
  const std::string selecting = filter.substr(0, filter.find('-'));
  size_t start = 0;
  while (start < selecting.size()) {
    size_t end = selecting.find(':', start);
    if (end == std::string::npos) end = selecting.size();
    if (end > start) patterns.push_back(selecting.substr(start, end - start));
    start = end + 1;
  }
  return patterns;
}

// gtest's patterns are globs with * and ?, as fnmatch's.
bool matches_a_test(const std::string& pattern) {
  const testing::UnitTest& tests = *testing::UnitTest::GetInstance();
  for (int i = 0; i < tests.total_test_suite_count(); ++i) {
    const testing::TestSuite& suite = *tests.GetTestSuite(i);
    for (int j = 0; j < suite.total_test_count(); ++j) {
      const std::string name = std::string(suite.name()) + "." + suite.GetTestInfo(j)->name();
      if (::fnmatch(pattern.c_str(), name.c_str(), 0) == 0) return true;
    }
  }
  return false;
}

// False, with a message for each, when a pattern of the filter matches no test.
bool filter_patterns_match() {
  bool all_match = true;
  for (const std::string& pattern : selecting_patterns(GTEST_FLAG_GET(filter))) {
    if (!matches_a_test(pattern)) {
      std::fprintf(stderr, "--gtest_filter: %s matches no test of this program\n", pattern.c_str());
      all_match = false;
    }
  }
  return all_match;
}

}  // namespace

int main(int argc, char** argv) {
  // gtest takes its flags out of a copy of the command line: fiber::init hands the command line
  // on as it is (to the processes it spawns, to mpirun when it restarts a program in a pod).
  std::vector<char*> gtest_argv(argv, argv + argc + 1);
  int gtest_argc = argc;
  testing::InitGoogleTest(&gtest_argc, gtest_argv.data());
  // Listing the tests (how the build finds them, cmake/FiberDiscoverGtests.cmake) needs neither
  // MPI nor any process.
  if (GTEST_FLAG_GET(list_tests)) return RUN_ALL_TESTS();

  fiber::testing::init(argc, argv);
  if (!filter_patterns_match()) return 1;
  const int status = RUN_ALL_TESTS();
  if (testing::UnitTest::GetInstance()->test_to_run_count() == 0) {
    std::fprintf(stderr, "--gtest_filter=%s selected no test\n", GTEST_FLAG_GET(filter).c_str());
    return 1;
  }
  return status;
}
