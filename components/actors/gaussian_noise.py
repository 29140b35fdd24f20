"""Gaussian exploration for deterministic policies (D4PG): noise clipped to the action spec."""

from __future__ import annotations

import numpy as np
import sonnet as snt
import tensorflow as tf

from agentkit.specs import EnvironmentSpec, bounded_continuous_actions
from components.actors.compiled_policy import CompiledFeedForwardPolicy


class GaussianNoisePolicy(CompiledFeedForwardPolicy):
    """a = clip(pi(o) + sigma * (maximum - minimum) / 2 * N(0, 1), minimum, maximum).

    sigma is in units of half the action range (as if actions were scaled to
    [-1, 1]), so one value suits every task; sigma 0 evaluates. The clip keeps
    every action inside the spec, whatever the noise.
    """

    def __init__(self, network: snt.Module, spec: EnvironmentSpec, sigma: float, seed: int = 0):
        super().__init__(spec, name="gaussian_noise_policy")
        self._network = network
        actions = bounded_continuous_actions(spec)
        self._minimum = tf.constant(np.broadcast_to(actions.minimum, actions.shape), actions.dtype)
        self._maximum = tf.constant(np.broadcast_to(actions.maximum, actions.shape), actions.dtype)
        self._dtype = actions.dtype
        self.sigma = float(sigma)
        self._noise_scale = self.sigma * (self._maximum - self._minimum) / 2.0
        self._rng = tf.random.Generator.from_seed(seed)

    def _select(self, observation):
        action = tf.cast(self._network(observation), self._dtype)
        if self.sigma > 0:
            action += self._noise_scale * tf.cast(self._rng.normal(tf.shape(action)), self._dtype)
        return tf.clip_by_value(action, self._minimum, self._maximum)
