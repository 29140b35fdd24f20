"""Target networks that trail the online ones: a copy every N steps, or Polyak averaging."""

from __future__ import annotations

from collections.abc import Sequence

import sonnet as snt
import tensorflow as tf


class TargetUpdate:
    """theta' <- theta every `period` learner steps, or theta' <- (1 - tau) theta' + tau theta
    after every step when `tau > 0`.

    `pairs` are (target, online) modules with the same variables in the same
    order (a target built as a copy of its online network). Call `update`
    inside the compiled step, after the step count was incremented.
    """

    def __init__(self, pairs: Sequence[tuple[snt.Module, snt.Module]], period: int = 1,
                 tau: float = 0.0):
        if period < 1:
            raise ValueError(f"target update period must be >= 1, got {period}")
        if not 0.0 <= tau <= 1.0:
            raise ValueError(f"target update tau must be in [0, 1], got {tau}")
        self._pairs = [(t, s) for target, online in pairs
                       for t, s in zip(target.variables, online.variables, strict=True)]
        self._period = int(period)
        self._tau = float(tau)

    def update(self, num_steps: tf.Variable) -> None:
        if self._tau > 0:
            for target, source in self._pairs:
                target.assign((1.0 - self._tau) * target + self._tau * source)
        else:  # An explicit cond: the learner's step is traced without autograph.
            def copy() -> tf.Tensor:
                for target, source in self._pairs:
                    target.assign(source)
                return tf.constant(True)

            tf.cond(tf.equal(num_steps % self._period, 0), copy, lambda: tf.constant(False))
