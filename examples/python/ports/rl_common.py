"""Building blocks shared by the Python ports' legacy and port programs (examples/python/ports/):
a numpy MLP over a flat parameter vector, a greedy episode on a Gymnasium environment, Adam,
OpenAI-ES and the deep-neuroevolution genome. Both forms of a program import this module, so
the pair differs in its MPI plumbing only.

Every random draw comes from an ``np.random.Generator`` made from an explicit seed, and an
episode's return depends on the parameters and the episode's seed alone: a fitness is the same
whichever process computes it."""

from __future__ import annotations

import argparse
import queue
from functools import lru_cache

import gymnasium as gym
import numpy as np

EVALUATION_EPISODES = 10

# Gymnasium's reward thresholds, the default --target of each environment.
TARGETS = {"CartPole-v1": 475.0, "Pendulum-v1": -200.0}


@lru_cache(maxsize=None)
def environment(name: str) -> gym.Env:
    """One environment per process and name, reset with a seed before each episode."""
    return gym.make(name, disable_env_checker=True)


def layer_sizes(name: str, hidden: tuple[int, ...]) -> tuple[int, ...]:
    """The MLP's sizes for environment ``name``: observations, ``hidden``, one output per
    discrete action or per dimension of a continuous action."""
    env = environment(name)
    space = env.action_space
    outputs = space.n if isinstance(space, gym.spaces.Discrete) else space.shape[0]
    return (env.observation_space.shape[0], *hidden, int(outputs))


def parameter_count(sizes: tuple[int, ...]) -> int:
    return sum((fan_in + 1) * fan_out for fan_in, fan_out in zip(sizes, sizes[1:]))


def unflatten(sizes: tuple[int, ...], params: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """The (weights, bias) of each layer as views of ``params``; weights are (fan_in, fan_out)."""
    layers, offset = [], 0
    for fan_in, fan_out in zip(sizes, sizes[1:]):
        weights = params[offset:offset + fan_in * fan_out].reshape(fan_in, fan_out)
        offset += fan_in * fan_out
        layers.append((weights, params[offset:offset + fan_out]))
        offset += fan_out
    return layers


def initial_parameters(sizes: tuple[int, ...], rng: np.random.Generator,
                       last_scale: float = 1.0) -> np.ndarray:
    """Weights drawn from N(0, 1 / fan_in) (the last layer's times ``last_scale``), biases 0."""
    parts = []
    for index, (fan_in, fan_out) in enumerate(zip(sizes, sizes[1:])):
        scale = (last_scale if index == len(sizes) - 2 else 1.0) / np.sqrt(fan_in)
        parts += [rng.standard_normal(fan_in * fan_out) * scale, np.zeros(fan_out)]
    return np.concatenate(parts)


def activations(layers: list[tuple[np.ndarray, np.ndarray]], x: np.ndarray) -> list[np.ndarray]:
    """Each layer's input and the output, for :func:`backward`: tanh hidden layers, a linear
    output; ``x`` one observation or a batch of rows."""
    values = [x]
    for weights, bias in layers[:-1]:
        values.append(np.tanh(values[-1] @ weights + bias))
    weights, bias = layers[-1]
    values.append(values[-1] @ weights + bias)
    return values


def forward(layers: list[tuple[np.ndarray, np.ndarray]], x: np.ndarray) -> np.ndarray:
    return activations(layers, x)[-1]


def backward(layers: list[tuple[np.ndarray, np.ndarray]], values: list[np.ndarray],
             output_gradient: np.ndarray) -> np.ndarray:
    """The gradient of a loss over the flat parameters, from its gradient over a batch's
    outputs and the batch's :func:`activations` ``values``."""
    parts = []
    gradient = output_gradient
    for index in reversed(range(len(layers))):
        inputs = values[index]
        parts = [(inputs.T @ gradient).ravel(), gradient.sum(axis=0)] + parts
        if index > 0:
            gradient = (gradient @ layers[index][0].T) * (1 - inputs * inputs)
    return np.concatenate(parts)


def greedy_action(space: gym.Space, output: np.ndarray):
    """A deterministic policy's action: the best-scored discrete action, or the output clipped
    to a continuous action's bounds."""
    if isinstance(space, gym.spaces.Discrete):
        return int(np.argmax(output))
    return np.clip(output, space.low, space.high)


def episode_return(name: str, sizes: tuple[int, ...], params: np.ndarray, seed: int) -> float:
    """The return of one episode of the greedy policy ``params``, started from ``seed``."""
    env = environment(name)
    layers = unflatten(sizes, np.asarray(params, dtype=np.float64))
    observation, _ = env.reset(seed=int(seed))
    total, done = 0.0, False
    while not done:
        action = greedy_action(env.action_space, forward(layers, observation))
        observation, reward, terminated, truncated, _ = env.step(action)
        total += float(reward)
        done = terminated or truncated
    return total


def draw_seeds(rng: np.random.Generator, count: int) -> list[int]:
    """``count`` seeds for episodes or noise, as Python ints (they travel and print plainly)."""
    return [int(seed) for seed in rng.integers(0, 2**63 - 1, size=count)]


class Adam:
    """Adam (Kingma and Ba, 2014) on a flat parameter vector: ``step`` descends ``gradient``."""

    def __init__(self, size: int, learning_rate: float, beta1: float = 0.9, beta2: float = 0.999,
                 epsilon: float = 1e-8):
        self.learning_rate, self.beta1, self.beta2 = learning_rate, beta1, beta2
        self.epsilon = epsilon
        self.m = np.zeros(size)
        self.v = np.zeros(size)
        self.t = 0

    def step(self, params: np.ndarray, gradient: np.ndarray) -> np.ndarray:
        self.t += 1
        self.m = self.beta1 * self.m + (1 - self.beta1) * gradient
        self.v = self.beta2 * self.v + (1 - self.beta2) * gradient * gradient
        m_hat = self.m / (1 - self.beta1**self.t)
        v_hat = self.v / (1 - self.beta2**self.t)
        return params - self.learning_rate * m_hat / (np.sqrt(v_hat) + self.epsilon)


def centered_ranks(fitness: np.ndarray) -> np.ndarray:
    """Fitness replaced by its rank scaled into [-0.5, 0.5]; ties ranked by index."""
    ranks = np.empty(len(fitness))
    ranks[np.argsort(fitness, kind="stable")] = np.arange(len(fitness))
    return ranks / (len(fitness) - 1) - 0.5


class OpenEs:
    """OpenAI-ES (Salimans et al., 2017) as estool has it: antithetic sampling around a mean,
    centered-rank fitness shaping, an Adam step on the estimated gradient."""

    def __init__(self, mean: np.ndarray, population: int, sigma: float, learning_rate: float,
                 seed: int):
        self.mean = np.array(mean, dtype=np.float64)
        self.population, self.sigma = population, sigma
        self.optimizer = Adam(self.mean.size, learning_rate)
        self.rng = np.random.default_rng(seed)
        self.noise = np.empty((0, self.mean.size))

    def ask(self) -> np.ndarray:
        """This iteration's solutions, one per row: mean + sigma * noise for the first half,
        mean - sigma * noise for the second."""
        half = self.rng.standard_normal((self.population // 2, self.mean.size))
        self.noise = np.concatenate([half, -half])
        return self.mean + self.sigma * self.noise

    def tell(self, fitness) -> None:
        weights = centered_ranks(np.asarray(fitness, dtype=np.float64))
        gradient = weights @ self.noise / (self.population * self.sigma)
        self.mean = self.optimizer.step(self.mean, -gradient)


def decode_genome(sizes: tuple[int, ...], genome: list[int], sigma: float) -> np.ndarray:
    """A deep-neuroevolution genome's parameters: the initial parameters drawn from its first
    seed plus ``sigma`` times the Gaussian noise of each later seed."""
    params = initial_parameters(sizes, np.random.default_rng(genome[0]))
    for seed in genome[1:]:
        params += sigma * np.random.default_rng(seed).standard_normal(params.size)
    return params


def parse_options(description: str, defaults: dict,
                  extra: dict | None = None) -> argparse.Namespace:
    """Options ``--name value`` for each entry of ``defaults`` (typed by its default), plus
    ``extra`` (the port's --workers/--members); ``--env`` picks the environment and ``--target``
    defaults to its reward threshold."""
    parser = argparse.ArgumentParser(description=description)
    for name, default in {**defaults, **(extra or {})}.items():
        parser.add_argument("--" + name.replace("_", "-"), type=type(default), default=default)
    parser.add_argument("--target", type=float, default=None,
                        help="average evaluation return to stop at "
                        "(default: the environment's threshold)")
    options = parser.parse_args()
    if options.target is None and "env" in defaults:
        options.target = TARGETS.get(options.env, float("inf"))
    return options


def relay(group, reports) -> tuple | None:
    """A port's master beside its running ``group``: prints each line member 0 puts on the
    ``reports`` queue and returns the result it puts last (a tuple); None when the group ended
    without one (a member failed)."""
    while True:
        try:
            report = reports.get(timeout=1.0)
        except queue.Empty:
            if group.is_alive():
                continue
            return None
        except EOFError:  # fibermpi's get: the queue is empty and none of its writers is alive
            return None
        if not isinstance(report, str):
            return report
        print(report, flush=True)
