// Entry point of the multi-process test programs: fiber::init first, so the spawned copies of the
// test binary become workers instead of running the tests again.
#include <gtest/gtest.h>

#include "fiber/fiber.h"
#include "test_support.h"

int main(int argc, char** argv) {
  fiber::testing::init(argc, argv);
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
