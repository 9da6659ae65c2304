// Must not compile: a lambda with captures cannot travel to another process by reference.
#include "fiber/fiber.h"

int main(int argc, char** argv) {
  fiber::init(argc, argv);
  int seed = 3;
  fiber::Process p([seed] { (void)seed; });
}
