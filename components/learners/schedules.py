"""Learning-rate schedules that live in the compiled step and in checkpoints."""

from __future__ import annotations

import tensorflow as tf


class LinearDecay:
    """A learning rate going linearly from `initial` to `final` over `steps` (0: constant).

    `rate` is a tf.Variable for the optimizer; call `update(num_steps)` inside
    the compiled step after each update.
    """

    def __init__(self, initial: float, final: float | None = None, steps: int = 0):
        self.rate = tf.Variable(initial, dtype=tf.float32, trainable=False)
        self._initial = float(initial)
        self._final = float(initial if final is None else final)
        self._steps = int(steps)

    def update(self, num_steps: tf.Tensor) -> None:
        if self._steps > 0:
            fraction = tf.minimum(tf.cast(num_steps, tf.float32) / float(self._steps), 1.0)
            self.rate.assign(self._initial + fraction * (self._final - self._initial))
