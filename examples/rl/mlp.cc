#include "rl/mlp.h"

#include <cmath>
#include <random>
#include <stdexcept>
#include <utility>

namespace rl {

Mlp::Mlp(std::vector<int> layer_sizes) : layer_sizes_(std::move(layer_sizes)) {
  if (layer_sizes_.size() < 2)
    throw std::invalid_argument("Mlp: needs an input and an output size");
  for (int size : layer_sizes_)
    if (size < 1) throw std::invalid_argument("Mlp: every layer needs at least one unit");
  for (std::size_t layer = 0; layer + 1 < layer_sizes_.size(); ++layer) {
    offsets_.push_back(parameter_count_);
    const auto fan_in = static_cast<std::size_t>(layer_sizes_[layer]);
    const auto fan_out = static_cast<std::size_t>(layer_sizes_[layer + 1]);
    parameter_count_ += fan_out * fan_in + fan_out;
  }
}

std::vector<double> Mlp::initial_parameters(std::uint64_t seed) const {
  std::mt19937_64 rng(seed);
  std::vector<double> params(parameter_count_);
  for (std::size_t layer = 0; layer < offsets_.size(); ++layer) {
    const int fan_in = layer_sizes_[layer], fan_out = layer_sizes_[layer + 1];
    const double bound = 1.0 / std::sqrt(static_cast<double>(fan_in));
    std::uniform_real_distribution<double> uniform(-bound, bound);
    const std::size_t end = offsets_[layer] + static_cast<std::size_t>(fan_out * (fan_in + 1));
    for (std::size_t i = offsets_[layer]; i < end; ++i) params[i] = uniform(rng);
  }
  return params;
}

std::vector<double> Mlp::forward(std::span<const double> params,
                                 std::span<const double> input) const {
  if (input.size() != static_cast<std::size_t>(input_size()))
    throw std::invalid_argument("Mlp::forward: the input does not have input_size() values");
  MlpActivations activations = forward_batch(params, input);
  return std::move(activations.layers.back());
}

MlpActivations Mlp::forward_batch(std::span<const double> params,
                                  std::span<const double> inputs) const {
  if (params.size() != parameter_count_ || inputs.size() % input_size() != 0)
    throw std::invalid_argument("Mlp::forward_batch: parameter or input size does not fit");
  MlpActivations activations;
  activations.batch_size = static_cast<int>(inputs.size() / input_size());
  activations.layers.emplace_back(inputs.begin(), inputs.end());
  const std::size_t last = offsets_.size() - 1;
  for (std::size_t layer = 0; layer <= last; ++layer) {
    const auto fan_in = static_cast<std::size_t>(layer_sizes_[layer]);
    const auto fan_out = static_cast<std::size_t>(layer_sizes_[layer + 1]);
    const double* weights = params.data() + offsets_[layer];
    const double* biases = weights + fan_out * fan_in;
    const std::vector<double>& in = activations.layers.back();
    std::vector<double> out(activations.batch_size * fan_out);
    for (std::size_t b = 0; b < static_cast<std::size_t>(activations.batch_size); ++b) {
      const double* x = in.data() + b * fan_in;
      for (std::size_t j = 0; j < fan_out; ++j) {
        const double* row = weights + j * fan_in;
        double sum = biases[j];
        for (std::size_t k = 0; k < fan_in; ++k) sum += row[k] * x[k];
        out[b * fan_out + j] = layer == last ? sum : std::tanh(sum);
      }
    }
    activations.layers.push_back(std::move(out));
  }
  return activations;
}

std::vector<double> Mlp::backward(std::span<const double> params, const MlpActivations& activations,
                                  std::span<const double> output_gradient) const {
  const auto batch = static_cast<std::size_t>(activations.batch_size);
  if (params.size() != parameter_count_ || activations.layers.size() != layer_sizes_.size() ||
      output_gradient.size() != batch * output_size())
    throw std::invalid_argument("Mlp::backward: sizes do not fit the forward pass");
  std::vector<double> gradient(parameter_count_, 0.0);
  // d(loss)/d(pre-activation) of the current layer's units, one row per input.
  std::vector<double> delta(output_gradient.begin(), output_gradient.end());
  for (std::size_t layer = offsets_.size(); layer-- > 0;) {
    const auto fan_in = static_cast<std::size_t>(layer_sizes_[layer]);
    const auto fan_out = static_cast<std::size_t>(layer_sizes_[layer + 1]);
    const double* weights = params.data() + offsets_[layer];
    double* weight_gradient = gradient.data() + offsets_[layer];
    double* bias_gradient = weight_gradient + fan_out * fan_in;
    const std::vector<double>& in = activations.layers[layer];
    for (std::size_t b = 0; b < batch; ++b) {
      const double* x = in.data() + b * fan_in;
      for (std::size_t j = 0; j < fan_out; ++j) {
        const double d = delta[b * fan_out + j];
        bias_gradient[j] += d;
        double* row = weight_gradient + j * fan_in;
        for (std::size_t k = 0; k < fan_in; ++k) row[k] += d * x[k];
      }
    }
    if (layer == 0) break;
    // Through the weights, then through the previous layer's tanh: tanh' = 1 - tanh^2.
    std::vector<double> previous(batch * fan_in, 0.0);
    for (std::size_t b = 0; b < batch; ++b) {
      double* p = previous.data() + b * fan_in;
      for (std::size_t j = 0; j < fan_out; ++j) {
        const double d = delta[b * fan_out + j];
        const double* row = weights + j * fan_in;
        for (std::size_t k = 0; k < fan_in; ++k) p[k] += d * row[k];
      }
      const double* a = in.data() + b * fan_in;
      for (std::size_t k = 0; k < fan_in; ++k) p[k] *= 1.0 - a[k] * a[k];
    }
    delta = std::move(previous);
  }
  return gradient;
}

}  // namespace rl
