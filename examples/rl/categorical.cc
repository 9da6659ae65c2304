#include "rl/categorical.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace rl {

std::vector<double> log_softmax(std::span<const double> logits) {
  const double top = *std::max_element(logits.begin(), logits.end());
  double sum = 0;
  for (double logit : logits) sum += std::exp(logit - top);
  // Shifting by the largest logit before the sum keeps exp() finite and, subtracted first,
  // keeps the small differences between logits exact however large the logits are.
  const double log_sum = std::log(sum);
  std::vector<double> result(logits.size());
  for (std::size_t i = 0; i < logits.size(); ++i) result[i] = (logits[i] - top) - log_sum;
  return result;
}

int sample_categorical(std::span<const double> logits, std::mt19937_64& rng) {
  const std::vector<double> log_p = log_softmax(logits);
  double u = std::uniform_real_distribution<double>(0.0, 1.0)(rng);
  for (std::size_t i = 0; i + 1 < log_p.size(); ++i) {
    u -= std::exp(log_p[i]);
    if (u < 0) return static_cast<int>(i);
  }
  // Rounding can leave a sliver of u beyond the last cumulative sum: it belongs to the last
  // action.
  return static_cast<int>(log_p.size() - 1);
}

double categorical_entropy(std::span<const double> logits) {
  double entropy = 0;
  for (double log_p : log_softmax(logits)) entropy -= std::exp(log_p) * log_p;
  return entropy;
}

void add_log_prob_gradient(std::span<const double> logits, int action, double scale,
                           std::span<double> gradient) {
  const std::vector<double> log_p = log_softmax(logits);
  for (std::size_t i = 0; i < log_p.size(); ++i)
    gradient[i] += scale * ((static_cast<int>(i) == action ? 1.0 : 0.0) - std::exp(log_p[i]));
}

}  // namespace rl
