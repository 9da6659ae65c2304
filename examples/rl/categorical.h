// A categorical distribution over discrete actions, given by unnormalised log-probabilities.
#pragma once

#include <random>
#include <span>
#include <vector>

namespace rl {

// log softmax(logits), computed without overflow.
std::vector<double> log_softmax(std::span<const double> logits);

// An action drawn with probabilities softmax(logits).
int sample_categorical(std::span<const double> logits, std::mt19937_64& rng);

// Entropy of softmax(logits), in nats.
double categorical_entropy(std::span<const double> logits);

// Adds scale * d(log p(action))/d(logits) = scale * (one_hot(action) - softmax(logits)) to
// `gradient`, which has one entry per logit.
void add_log_prob_gradient(std::span<const double> logits, int action, double scale,
                           std::span<double> gradient);

}  // namespace rl
