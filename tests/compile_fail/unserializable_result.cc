// Must not compile: a pool task whose result cannot be sent back to the master.
#include <memory>
#include <vector>

#include "fiber/fiber.h"

struct Handle {
  std::unique_ptr<int> owned;
};

Handle open_handle(int) { return {}; }

int main(int argc, char** argv) {
  fiber::init(argc, argv);
  fiber::Pool pool(2);
  pool.map(open_handle, std::vector<int>{1});
}
