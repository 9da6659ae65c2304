// Must not compile: starmap tuples of two values for a function of three parameters.
#include <tuple>
#include <vector>

#include "fiber/fiber.h"

int volume(int x, int y, int z) { return x * y * z; }

int main(int argc, char** argv) {
  fiber::init(argc, argv);
  fiber::Pool pool(2);
  std::vector<std::tuple<int, int>> pairs{{1, 2}};
  pool.starmap(volume, pairs);
}
