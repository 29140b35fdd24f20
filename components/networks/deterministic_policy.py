"""A deterministic policy for bounded continuous actions: MLP -> tanh -> the action bounds."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import sonnet as snt
import tensorflow as tf
from dm_env import specs

from components.networks.layer_norm_mlp import LayerNormMLP


class DeterministicPolicy(snt.Module):
    """observation [B, ...] -> action [B, *action_shape] inside [minimum, maximum].

    tanh keeps the output in (-1, 1); an affine map sends that onto the
    spec's bounds, so every action the network proposes is valid. With
    `layer_norm`, the torso is a `LayerNormMLP`.
    """

    def __init__(self, action_spec: specs.BoundedArray, hidden_sizes: Sequence[int],
                 layer_norm: bool = False, name: str = "deterministic_policy"):
        super().__init__(name=name)
        self._shape = tuple(action_spec.shape)
        size = int(np.prod(self._shape))
        minimum = np.broadcast_to(action_spec.minimum, self._shape).astype(np.float32)
        maximum = np.broadcast_to(action_spec.maximum, self._shape).astype(np.float32)
        self._scale = tf.constant((maximum - minimum) / 2.0)
        self._offset = tf.constant((maximum + minimum) / 2.0)
        if layer_norm:
            # The output layer starts near zero, so early actions sit mid-range, far
            # from tanh's flat ends where the policy gradient vanishes.
            self._mlp = snt.Sequential([
                LayerNormMLP(hidden_sizes),
                snt.Linear(size, w_init=snt.initializers.TruncatedNormal(stddev=1e-4))])
        else:
            self._mlp = snt.nets.MLP(list(hidden_sizes) + [size], activate_final=False)

    def __call__(self, observation: tf.Tensor) -> tf.Tensor:
        flat = snt.Flatten()(tf.cast(observation, tf.float32))
        out = tf.tanh(self._mlp(flat))
        out = tf.reshape(out, [-1, *self._shape])
        return self._offset + self._scale * out
