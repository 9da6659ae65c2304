// Runs one Process through an installed fibermpi and checks the value it sends back.
#include <fiber/fiber.h>

#include <iostream>

int triple(int x, fiber::SimpleQueue<int> out) {
  out.put(3 * x);
  return 0;
}

int main(int argc, char** argv) {
  fiber::init(argc, argv);
  fiber::SimpleQueue<int> out;
  fiber::Process p(triple, 14, out);
  p.start();
  const int value = out.get();
  p.join();
  std::cout << "consumer got " << value << " exitcode " << *p.exitcode() << "\n";
  return value == 42 && p.exitcode() == 0 ? 0 : 1;
}
