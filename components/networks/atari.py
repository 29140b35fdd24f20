"""The convolutional torso of the Nature DQN (Mnih et al., 2015)."""

from __future__ import annotations

import sonnet as snt
import tensorflow as tf

# The three valid-padding convolutions need at least this many pixels a side.
MIN_SIDE = 36


class AtariTorso(snt.Module):
    """uint8 [B, H, W, C] frames -> scaled to [0, 1] -> 3 conv layers -> flat features."""

    def __init__(self, name: str = "atari_torso"):
        super().__init__(name=name)
        self._network = snt.Sequential([
            snt.Conv2D(32, [8, 8], stride=[4, 4], padding="VALID"),
            tf.nn.relu,
            snt.Conv2D(64, [4, 4], stride=[2, 2], padding="VALID"),
            tf.nn.relu,
            snt.Conv2D(64, [3, 3], stride=[1, 1], padding="VALID"),
            tf.nn.relu,
            snt.Flatten(),
        ])

    def __call__(self, inputs: tf.Tensor) -> tf.Tensor:
        return self._network(tf.cast(inputs, tf.float32) / 255.0)
