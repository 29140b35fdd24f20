"""Learning-rate schedules that live in the compiled step and in checkpoints."""

from __future__ import annotations

import tensorflow as tf


class LinearDecay:
    """A learning rate going linearly from `initial` to `final` over `steps` (0: constant).

    `rate` is a tf.Variable for the optimizer; the learner loop calls
    `update(num_steps, metrics)` inside the compiled step after each update.
    """

    def __init__(self, initial: float, final: float | None = None, steps: int = 0):
        self.rate = tf.Variable(initial, dtype=tf.float32, trainable=False)
        self._initial = float(initial)
        self._final = float(initial if final is None else final)
        self._steps = int(steps)

    def update(self, num_steps: tf.Tensor, metrics: dict | None = None) -> None:
        del metrics  # This rate follows the step count alone.
        if self._steps > 0:
            fraction = tf.minimum(tf.cast(num_steps, tf.float32) / float(self._steps), 1.0)
            self.rate.assign(self._initial + fraction * (self._final - self._initial))


class KLAdaptive:
    """A learning rate steered by how far each SGD step moves the policy (rl_games' adaptive
    schedule): divided by `factor` after a step whose KL from the behaviour policy is above
    twice `target`, multiplied by it below half, kept within [`low`, `high`].

    The rate climbs while the policy moves little and falls as soon as it moves too much, so
    large batches (few updates) need no hand-tuned rate; PPO's Atari preset uses it as
    rl_games' Pong settings do (its run with and without it is not compared yet).
    `rate` is a tf.Variable (saved with the learner); the learner loop's `update(num_steps,
    metrics)` after each applied step adapts it to the step's `approx_kl` (the loss's
    KL from the behaviour policy, measured before the update, as rl_games' schedule does).
    """

    def __init__(self, initial: float, target: float, factor: float = 1.5,
                 low: float = 1e-6, high: float = 1e-2):
        if not (target > 0 and factor > 1 and 0 < low <= initial <= high):
            raise ValueError(f"KLAdaptive needs target > 0, factor > 1 and low <= initial <= "
                             f"high, got target={target}, factor={factor}, "
                             f"[{low}, {initial}, {high}]")
        self.rate = tf.Variable(initial, dtype=tf.float32, trainable=False)
        self._target, self._factor = float(target), float(factor)
        self._low, self._high = float(low), float(high)

    def update(self, num_steps: tf.Tensor, metrics: dict | None = None) -> None:
        """Adapts the rate to the step's KL (`metrics["approx_kl"]`), not to the step count."""
        del num_steps
        if metrics is None or "approx_kl" not in metrics:
            raise ValueError("KLAdaptive follows the loss's 'approx_kl', which it does not give")
        self.adapt(metrics["approx_kl"])

    def adapt(self, kl: tf.Tensor) -> tf.Operation:
        """Moves the rate for the KL of the step just taken; returns the assignment."""
        rate = self.rate
        lower = tf.maximum(rate / self._factor, self._low)
        higher = tf.minimum(rate * self._factor, self._high)
        return self.rate.assign(tf.where(kl > 2.0 * self._target, lower,
                                         tf.where(kl < 0.5 * self._target, higher, rate)))
