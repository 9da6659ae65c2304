// Must not compile: a Process argument of a type that cannot be sent to another process. The
// test checks that the compiler prints fibermpi's explanation.
#include <memory>

#include "fiber/fiber.h"

struct Opaque {
  std::unique_ptr<int> handle;
};

void use(Opaque) {}

int main(int argc, char** argv) {
  fiber::init(argc, argv);
  fiber::Process p(use, Opaque{});
}
