// Entry point of the multi-process test programs: fiber::init first, so the spawned copies of the
// test binary become workers instead of running the tests again.
#include <gtest/gtest.h>

#include "fiber/fiber.h"

int main(int argc, char** argv) {
  fiber::init(argc, argv);
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
