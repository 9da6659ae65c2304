// A small multilayer perceptron over one flat parameter vector, with hand-written backprop.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace rl {

// Every layer's activations for a batch of inputs, as Mlp::forward_batch leaves them for
// Mlp::backward. Each layer is row-major, one row per input.
struct MlpActivations {
  int batch_size = 0;
  // layers[0] holds the inputs, layers.back() the outputs, the ones between the tanh outputs
  // of the hidden layers.
  std::vector<std::vector<double>> layers;

  // The network's outputs, batch_size rows of the output size.
  std::span<const double> outputs() const { return layers.back(); }
};

// A fully connected network: tanh on every hidden layer, a linear output layer. The network
// holds only its shape; the parameters live in a flat vector the caller owns, because ES, GA and
// PPO all treat them as one vector (perturb it, send it, average gradients over it). Each layer
// takes its weights row-major (one row per output unit), then its biases.
//
// Double precision: the environments are double, finite-difference gradient checks need it,
// and networks this small cost little either way.
class Mlp {
 public:
  // `layer_sizes`: the input size, the hidden layer sizes, the output size. Throws
  // std::invalid_argument for fewer than two sizes or a size below 1.
  explicit Mlp(std::vector<int> layer_sizes);

  // Width of the input.
  int input_size() const { return layer_sizes_.front(); }

  // Width of the output.
  int output_size() const { return layer_sizes_.back(); }

  // Length of the flat parameter vector.
  std::size_t parameter_count() const { return parameter_count_; }

  // Parameters drawn from `seed` the way PyTorch's nn.Linear starts: weights and biases uniform
  // in [-1/sqrt(fan_in), 1/sqrt(fan_in)).
  std::vector<double> initial_parameters(std::uint64_t seed) const;

  // The output for one input.
  std::vector<double> forward(std::span<const double> params, std::span<const double> input) const;

  // Every layer's activations for `inputs`, row-major with input_size() values per row.
  MlpActivations forward_batch(std::span<const double> params,
                               std::span<const double> inputs) const;

  // The gradient with respect to the parameters of sum over the batch of
  // dot(output_gradient[b], output[b]): backprop of `output_gradient` (one row per input, the
  // loss's derivative with respect to each output) through the pass that made `activations`.
  std::vector<double> backward(std::span<const double> params, const MlpActivations& activations,
                               std::span<const double> output_gradient) const;

 private:
  std::vector<int> layer_sizes_;
  // Where each layer's weights start in the flat vector (its biases follow them).
  std::vector<std::size_t> offsets_;
  std::size_t parameter_count_ = 0;
};

}  // namespace rl
