// The MLP of examples/rl/ (shape, initialisation, forward pass, backprop against finite
// differences) and Adam against a hand computation.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <random>
#include <stdexcept>
#include <vector>

#include "rl/adam.h"
#include "rl/mlp.h"

namespace {

std::vector<double> random_values(std::size_t count, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  std::vector<double> values(count);
  for (double& value : values) value = uniform(rng);
  return values;
}

// sum_b dot(output_gradient[b], output[b]): the loss whose gradient backward() returns.
double weighted_output_sum(const rl::Mlp& net, const std::vector<double>& params,
                           const std::vector<double>& inputs,
                           const std::vector<double>& output_gradient) {
  const rl::MlpActivations activations = net.forward_batch(params, inputs);
  double sum = 0;
  for (std::size_t i = 0; i < output_gradient.size(); ++i)
    sum += output_gradient[i] * activations.outputs()[i];
  return sum;
}

TEST(Mlp, ParameterCountHasWeightsAndBiasesOfEveryLayer) {
  EXPECT_EQ(rl::Mlp({4, 16, 2}).parameter_count(), 4u * 16 + 16 + 16 * 2 + 2);
  EXPECT_EQ(rl::Mlp({3, 1}).parameter_count(), 4u);
  const rl::Mlp net({4, 64, 64, 2});
  EXPECT_EQ(net.input_size(), 4);
  EXPECT_EQ(net.output_size(), 2);
}

TEST(Mlp, RejectsShapesWithoutTwoPositiveSizes) {
  EXPECT_THROW(rl::Mlp({4}), std::invalid_argument);
  EXPECT_THROW(rl::Mlp({4, 0, 2}), std::invalid_argument);
}

TEST(Mlp, InitialParametersAreDeterministicAndBoundedByTheFanIn) {
  const rl::Mlp net({4, 16, 2});
  const std::vector<double> a = net.initial_parameters(1);
  EXPECT_EQ(a, net.initial_parameters(1));
  EXPECT_NE(a, net.initial_parameters(2));
  // Layer 1: fan-in 4, bound 1/2 (80 values); layer 2: fan-in 16, bound 1/4 (34 values).
  const auto max_abs = [&](std::size_t begin, std::size_t end) {
    double m = 0;
    for (std::size_t i = begin; i < end; ++i) m = std::max(m, std::abs(a[i]));
    return m;
  };
  EXPECT_LT(max_abs(0, 80), 0.5);
  EXPECT_GT(max_abs(0, 80), 0.4);
  EXPECT_LT(max_abs(80, 114), 0.25);
  EXPECT_GT(max_abs(80, 114), 0.2);
}

TEST(Mlp, ForwardAppliesTanhToHiddenLayersAndNotToTheOutput) {
  const rl::Mlp net({2, 2, 1});
  // W1 = [[1, 2], [3, 4]], b1 = [0.5, -0.5], W2 = [[1, -1]], b2 = [0.25].
  const std::vector<double> params = {1, 2, 3, 4, 0.5, -0.5, 1, -1, 0.25};
  const std::vector<double> output = net.forward(params, std::vector<double>{0.1, -0.2});
  ASSERT_EQ(output.size(), 1u);
  EXPECT_DOUBLE_EQ(output[0], std::tanh(0.2) - std::tanh(-1.0) + 0.25);
}

TEST(Mlp, ForwardBatchMatchesForwardRowByRow) {
  const rl::Mlp net({3, 5, 2});
  const std::vector<double> params = net.initial_parameters(9);
  const std::vector<double> inputs = random_values(4 * 3, 10);
  const rl::MlpActivations activations = net.forward_batch(params, inputs);
  ASSERT_EQ(activations.batch_size, 4);
  for (std::size_t b = 0; b < 4; ++b) {
    const std::vector<double> row(inputs.begin() + b * 3, inputs.begin() + b * 3 + 3);
    const std::vector<double> single = net.forward(params, row);
    EXPECT_EQ(single[0], activations.outputs()[b * 2]);
    EXPECT_EQ(single[1], activations.outputs()[b * 2 + 1]);
  }
}

TEST(Mlp, ForwardRejectsInputsOfTheWrongSize) {
  const rl::Mlp net({3, 2});
  const std::vector<double> params = net.initial_parameters(1);
  EXPECT_THROW(net.forward(params, std::vector<double>{1.0, 2.0}), std::invalid_argument);
  EXPECT_THROW(net.forward_batch(params, std::vector<double>(7)), std::invalid_argument);
}

TEST(Mlp, BackwardMatchesCentralFiniteDifferences) {
  const rl::Mlp net({3, 5, 4, 2});
  const std::vector<double> params = random_values(net.parameter_count(), 1);
  const std::vector<double> inputs = random_values(6 * 3, 2);
  const std::vector<double> output_gradient = random_values(6 * 2, 3);
  const std::vector<double> gradient =
      net.backward(params, net.forward_batch(params, inputs), output_gradient);
  ASSERT_EQ(gradient.size(), net.parameter_count());

  // Central differences err by O(h^2) (about 1e-10 here) plus rounding of order 1e-16 / h.
  constexpr double h = 1e-5;
  for (std::size_t i = 0; i < params.size(); ++i) {
    std::vector<double> plus = params, minus = params;
    plus[i] += h;
    minus[i] -= h;
    const double numeric = (weighted_output_sum(net, plus, inputs, output_gradient) -
                            weighted_output_sum(net, minus, inputs, output_gradient)) /
                           (2 * h);
    EXPECT_NEAR(gradient[i], numeric, 1e-8 * std::max(1.0, std::abs(numeric))) << "parameter " << i;
  }
}

TEST(Mlp, BackwardOfABatchIsTheSumOverItsRows) {
  const rl::Mlp net({2, 3, 2});
  const std::vector<double> params = net.initial_parameters(4);
  const std::vector<double> inputs = random_values(3 * 2, 5);
  const std::vector<double> output_gradient = random_values(3 * 2, 6);
  const std::vector<double> batch =
      net.backward(params, net.forward_batch(params, inputs), output_gradient);
  std::vector<double> summed(net.parameter_count(), 0.0);
  for (std::size_t b = 0; b < 3; ++b) {
    const std::vector<double> row(inputs.begin() + b * 2, inputs.begin() + b * 2 + 2);
    const std::vector<double> row_gradient(output_gradient.begin() + b * 2,
                                           output_gradient.begin() + b * 2 + 2);
    const std::vector<double> g =
        net.backward(params, net.forward_batch(params, row), row_gradient);
    for (std::size_t i = 0; i < g.size(); ++i) summed[i] += g[i];
  }
  for (std::size_t i = 0; i < summed.size(); ++i) EXPECT_NEAR(batch[i], summed[i], 1e-12) << i;
}

TEST(Mlp, BackwardRejectsAGradientOfTheWrongSize) {
  const rl::Mlp net({2, 2});
  const std::vector<double> params = net.initial_parameters(1);
  const rl::MlpActivations activations = net.forward_batch(params, std::vector<double>{1, 2});
  EXPECT_THROW(net.backward(params, activations, std::vector<double>{1.0}), std::invalid_argument);
}

// f(x, y) = (x - 3)^2 + 10 (y + 1)^2 from (0, 0), learning rate 0.1, the default betas. Step 1
// moves each coordinate by the learning rate against the gradient's sign (m_hat / sqrt(v_hat)
// = g / |g|, less epsilon's share); steps 2 and 3 are m = 0.9 m + 0.1 g, v = 0.999 v + 0.001 g^2,
// m_hat = m / (1 - 0.9^t), v_hat = v / (1 - 0.999^t) evaluated in double precision, e.g. step 2
// in x: g = -5.8, m = -1.12, v = 0.069604, m_hat = -5.8947, v_hat = 34.819, dx = 0.099897.
TEST(Adam, MatchesAHandComputationOnAQuadratic) {
  rl::Adam adam(2, rl::AdamOptions{.learning_rate = 0.1});
  std::vector<double> p = {0.0, 0.0};
  const auto gradient = [&] { return std::vector<double>{2 * (p[0] - 3), 20 * (p[1] + 1)}; };
  const double expected[3][2] = {{0.09999999983333335, -0.09999999995},
                                 {0.19989729258521102, -0.19958777222669788},
                                 {0.29961847654925267, -0.2984137284565159}};
  for (const auto& row : expected) {
    adam.step(p, gradient());
    EXPECT_NEAR(p[0], row[0], 1e-15);
    EXPECT_NEAR(p[1], row[1], 1e-15);
  }
  EXPECT_EQ(adam.steps(), 3);
}

TEST(Adam, ConvergesOnAQuadratic) {
  rl::Adam adam(2, rl::AdamOptions{.learning_rate = 0.05});
  std::vector<double> p = {0.0, 0.0};
  for (int step = 0; step < 2000; ++step)
    adam.step(p, std::vector<double>{2 * (p[0] - 3), 20 * (p[1] + 1)});
  EXPECT_NEAR(p[0], 3.0, 1e-3);
  EXPECT_NEAR(p[1], -1.0, 1e-3);
}

TEST(Adam, RejectsVectorsOfAnotherSize) {
  rl::Adam adam(2, rl::AdamOptions{});
  std::vector<double> p = {0.0, 0.0, 0.0};
  EXPECT_THROW(adam.step(p, std::vector<double>{1, 1, 1}), std::invalid_argument);
}

}  // namespace
