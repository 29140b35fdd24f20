"""A tanh-squashed Gaussian policy for bounded continuous actions (SAC, and any stochastic
continuous agent), and the twin Q critics that go with it.

The network gives a Gaussian over pre-squash actions u; an action is a = tanh(u), mapped
affinely onto the spec's bounds. The log-probability is taken in the squashed space [-1, 1]
(the bounds' affine map is a constant shift, left out as stable-baselines3 and Acme do, so a
target entropy of -dim(A) means the same on every task):

    log pi(a|o) = sum_i [ log N(u_i; mu_i, sigma_i) - log(1 - tanh(u_i)^2) ]
    log(1 - tanh(u)^2) = 2 (log 2 - u - softplus(-2u))     (stable for large |u|)
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import sonnet as snt
import tensorflow as tf
from dm_env import specs

LOG_STD_MIN, LOG_STD_MAX = -20.0, 2.0  # stable-baselines3's bounds on log sigma.


def _mlp(hidden_sizes: Sequence[int], output_size: int) -> snt.Module:
    return snt.nets.MLP([int(h) for h in hidden_sizes] + [int(output_size)],
                        activation=tf.nn.relu, activate_final=False)


def squashed_log_prob(u: tf.Tensor, mean: tf.Tensor, log_std: tf.Tensor) -> tf.Tensor:
    """log pi(tanh(u)) per batch row: the Gaussian's density of u, less tanh's log-Jacobian."""
    gaussian = -0.5 * (((u - mean) / tf.exp(log_std)) ** 2 + 2.0 * log_std + math.log(2 * math.pi))
    jacobian = 2.0 * (math.log(2.0) - u - tf.nn.softplus(-2.0 * u))
    return tf.reduce_sum(gaussian - jacobian, axis=-1)


class TanhGaussianPolicy(snt.Module):
    """observation [B, ...] -> (mean, log_std) [B, A] of the pre-squash Gaussian; `sample` and
    `mode` give actions inside the spec's bounds."""

    def __init__(self, action_spec: specs.BoundedArray, hidden_sizes: Sequence[int],
                 name: str = "tanh_gaussian_policy"):
        super().__init__(name=name)
        self._shape = tuple(action_spec.shape)
        self.action_size = int(np.prod(self._shape))
        minimum = np.broadcast_to(action_spec.minimum, self._shape).astype(np.float32)
        maximum = np.broadcast_to(action_spec.maximum, self._shape).astype(np.float32)
        self._scale = tf.constant((maximum - minimum).reshape(-1) / 2.0)
        self._offset = tf.constant((maximum + minimum).reshape(-1) / 2.0)
        self._mlp = _mlp(hidden_sizes, 2 * self.action_size)

    def __call__(self, observation: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        out = self._mlp(snt.Flatten()(tf.cast(observation, tf.float32)))
        mean, log_std = tf.split(out, 2, axis=-1)
        return mean, tf.clip_by_value(log_std, LOG_STD_MIN, LOG_STD_MAX)

    def to_action(self, squashed: tf.Tensor) -> tf.Tensor:
        """[B, A] in [-1, 1] -> actions of the spec's shape inside its bounds."""
        return tf.reshape(self._offset + self._scale * squashed, [-1, *self._shape])

    def to_squashed(self, action: tf.Tensor) -> tf.Tensor:
        """The inverse of `to_action`: a stored action back in [-1, 1], [B, A] (the critic's
        input, whatever the bounds)."""
        flat = tf.reshape(tf.cast(action, tf.float32), [-1, self.action_size])
        return (flat - self._offset) / self._scale

    def sample(self, observation: tf.Tensor, rng: tf.random.Generator
               ) -> tuple[tf.Tensor, tf.Tensor]:
        """(a squashed sample in [-1, 1] [B, A], its log-probability [B]); differentiable in
        the network's weights (the reparameterisation trick)."""
        mean, log_std = self(observation)
        u = mean + tf.exp(log_std) * rng.normal(tf.shape(mean))
        return tf.tanh(u), squashed_log_prob(u, mean, log_std)

    def mode(self, observation: tf.Tensor) -> tf.Tensor:
        """The deterministic action tanh(mean), in [-1, 1] [B, A]: the evaluation policy's."""
        return tf.tanh(self(observation)[0])


class TwinCritic(snt.Module):
    """(observation, squashed action [B, A]) -> (Q1, Q2), each [B]: two MLPs on [o, a]; their
    minimum is the clipped double-Q estimate (TD3's, SAC's)."""

    def __init__(self, hidden_sizes: Sequence[int], name: str = "twin_critic"):
        super().__init__(name=name)
        self._q1 = _mlp(hidden_sizes, 1)
        self._q2 = _mlp(hidden_sizes, 1)

    def __call__(self, observation: tf.Tensor, action: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        inputs = tf.concat([snt.Flatten()(tf.cast(observation, tf.float32)),
                            snt.Flatten()(tf.cast(action, tf.float32))], axis=-1)
        return tf.squeeze(self._q1(inputs), -1), tf.squeeze(self._q2(inputs), -1)
