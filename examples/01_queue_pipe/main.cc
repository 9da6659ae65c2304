// A pipe between the master and a child, and a queue passed from one child to another.
#include <iostream>
#include <string>

#include "fiber/fiber.h"

// Echoes every message back in upper case until it receives "bye".
void shout(fiber::Connection<std::string> conn) {
  for (;;) {
    std::string message = conn.recv();
    if (message == "bye") return;
    for (char& c : message) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    conn.send(message);
  }
}

void produce(fiber::SimpleQueue<int> q, int count) {
  for (int i = 0; i < count; ++i) q.put(i * i);
}

void consume(fiber::SimpleQueue<int> in, fiber::SimpleQueue<long> out, int count) {
  long sum = 0;
  for (int i = 0; i < count; ++i) sum += in.get();
  out.put(sum);
}

int main(int argc, char** argv) {
  fiber::init(argc, argv);

  auto [here, there] = fiber::Pipe<std::string>();
  fiber::Process echo(shout, there);
  echo.start();
  there.close();  // only the child uses that end now
  for (const char* word : {"hello", "fiber", "pipe"}) {
    here.send(word);
    std::cout << word << " -> " << here.recv() << "\n";
  }
  here.send("bye");
  echo.join();

  fiber::SimpleQueue<int> squares;
  fiber::SimpleQueue<long> total;
  fiber::Process producer(produce, squares, 100);
  fiber::Process consumer(consume, squares, total, 100);
  producer.start();
  consumer.start();
  std::cout << "sum of squares below 100: " << total.get() << "\n";  // 328350
  producer.join();
  consumer.join();
}
