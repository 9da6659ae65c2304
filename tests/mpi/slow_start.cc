// A fibermpi program that takes its time before fiber::init, so that a spawn of it blocks.
#include <chrono>
#include <cstdlib>
#include <thread>

#include "fiber/fiber.h"

int main(int argc, char** argv) {
  const char* delay = std::getenv("FIBER_SLOW_START_S");
  std::this_thread::sleep_for(std::chrono::seconds(delay ? std::atoi(delay) : 30));
  fiber::init(argc, argv);
}
