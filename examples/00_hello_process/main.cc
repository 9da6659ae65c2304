// Eight "training runs" in eight processes, each reporting its score through one queue.
#include <cmath>
#include <iostream>
#include <vector>

#include "fiber/fiber.h"

double run_episode(int seed) {
  double score = 0;
  for (int step = 1; step <= 1000; ++step) score += std::sin(seed * 0.1 + step * 0.01);
  return score;
}

void train(int seed, fiber::SimpleQueue<double> results) { results.put(run_episode(seed)); }

int main(int argc, char** argv) {
  fiber::init(argc, argv);  // a spawned worker never returns from here
  fiber::SimpleQueue<double> q;
  std::vector<fiber::Process> ps;
  for (int s = 0; s < 8; ++s) ps.emplace_back(train, s, q);
  for (auto& p : ps) p.start();
  for (int i = 0; i < 8; ++i) std::cout << q.get() << "\n";
  for (auto& p : ps) p.join();
  for (auto& p : ps)
    std::cout << p.name() << " pid " << p.pid() << " exitcode " << *p.exitcode() << "\n";
}
