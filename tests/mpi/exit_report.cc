// A child that throws: its stderr must name the process, the exception type and the message,
// and the parent sees exit code 1 (checked by CTest's PASS_REGULAR_EXPRESSION).
#include <iostream>
#include <stdexcept>
#include <string>

#include "fiber/fiber.h"
#include "test_support.h"

void train(int seed) { throw std::invalid_argument("bad seed " + std::to_string(seed)); }

int main(int argc, char** argv) {
  fiber::testing::init(argc, argv);
  fiber::Process p(train, 7);
  p.start();
  p.join();
  // One write: the child's forwarded stderr may arrive at any moment, and must not split the line.
  const std::string line = "exitcode " + std::to_string(p.exitcode().value_or(-1000)) + "\n";
  std::cerr << line << std::flush;
  return p.exitcode() == 1 ? 0 : 1;
}
