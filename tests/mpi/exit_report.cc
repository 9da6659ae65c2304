// A child that throws: its stderr must name the process, the exception type and the message,
// and the parent sees exit code 1 (checked by CTest's PASS_REGULAR_EXPRESSION).
#include <iostream>
#include <stdexcept>

#include "fiber/fiber.h"

void train(int seed) { throw std::invalid_argument("bad seed " + std::to_string(seed)); }

int main(int argc, char** argv) {
  fiber::init(argc, argv);
  fiber::Process p(train, 7);
  p.start();
  p.join();
  std::cerr << "exitcode " << p.exitcode().value_or(-1000) << std::endl;
  return p.exitcode() == 1 ? 0 : 1;
}
