// A task parameter that is a view (std::span) would travel as a pointer into the master's memory:
// rejected at compile time.
#include <span>
#include <vector>

#include "fiber/fiber.h"

double sum(std::span<const double> values) {
  double total = 0;
  for (double v : values) total += v;
  return total;
}

int main(int argc, char** argv) {
  fiber::init(argc, argv);
  fiber::Pool pool(1);
  const std::vector<double> values = {1, 2, 3};
  return static_cast<int>(pool.apply(sum, std::span<const double>(values)));
}
