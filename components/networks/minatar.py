"""The MinAtar paper's torso: one 16-filter 3x3 convolution over the 10x10xC grid."""

from __future__ import annotations

import sonnet as snt
import tensorflow as tf

from components.networks.initializers import hidden_init


class MinAtarTorso(snt.Module):
    """[B, 10, 10, C] frames of 0/1 -> float -> conv 16 3x3 (valid) -> ReLU -> flat (1,024).

    The paper's DQN puts a 128-unit hidden layer after it: an agent's head
    (`head_hidden_size`) in this toolkit.
    """

    def __init__(self, init: str = "default", name: str = "minatar_torso"):
        super().__init__(name=name)
        self._network = snt.Sequential([
            snt.Conv2D(16, [3, 3], stride=[1, 1], padding="VALID", w_init=hidden_init(init)),
            tf.nn.relu,
            snt.Flatten(),
        ])

    def __call__(self, inputs: tf.Tensor) -> tf.Tensor:
        return self._network(tf.cast(inputs, tf.float32))  # Already 0/1: no scaling.
