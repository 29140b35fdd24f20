"""Running per-element mean and variance of a network's inputs, and the inputs scaled by them.

rl_games' `normalize_input`: each pixel of an Atari frame stack is shifted by its running mean
and divided by its running standard deviation, then clipped to [-CLIP, CLIP]. A still
background becomes 0 and what moves (Pong's ball and paddles) stands out at unit scale,
where x / 255 leaves it a few grey levels above the background. The statistics are
variables of the network: actors and the evaluator get them with the weights, checkpoints
keep them; the learner moves them (`update`) with each batch of observations it learns from.
"""

from __future__ import annotations

import sonnet as snt
import tensorflow as tf

CLIP = 5.0  # rl_games' clip of normalised inputs.
EPSILON = 1e-5  # Added to the variance under the square root.


class RunningMeanStd(snt.Module):
    """x -> clip((x - mean) / sqrt(var + EPSILON), -CLIP, CLIP), with mean and var the running
    moments of every x given to `update` (per element of one input, over batches). Before the
    first update mean is 0 and var 1. Variables are made at the first call (any batch)."""

    def __init__(self, name: str = "running_mean_std"):
        super().__init__(name=name)

    @snt.once
    def _initialize(self, x: tf.Tensor) -> None:
        shape = x.shape[1:]
        self.mean = tf.Variable(tf.zeros(shape), trainable=False, name="mean")
        self.var = tf.Variable(tf.ones(shape), trainable=False, name="var")
        # rl_games' starting count: the first batch all but replaces the starting moments.
        self.count = tf.Variable(1e-4, trainable=False, name="count")

    def __call__(self, x: tf.Tensor) -> tf.Tensor:
        x = tf.cast(x, tf.float32)
        self._initialize(x)
        scaled = (x - self.mean) / tf.sqrt(self.var + EPSILON)
        return tf.clip_by_value(scaled, -CLIP, CLIP)

    def update(self, x: tf.Tensor) -> None:
        """Merges the moments of the batch x [N, ...] into the running ones (Chan et al.'s
        parallel formula: the result is the moments of every element seen, weighted alike)."""
        x = tf.cast(x, tf.float32)
        self._initialize(x)
        batch_mean, batch_var = tf.nn.moments(x, axes=[0])
        batch_count = tf.cast(tf.shape(x)[0], tf.float32)
        total = self.count + batch_count
        delta = batch_mean - self.mean
        m2 = (self.var * self.count + batch_var * batch_count
              + tf.square(delta) * self.count * batch_count / total)
        self.mean.assign_add(delta * batch_count / total)
        self.var.assign(m2 / total)
        self.count.assign(total)

    def update_from(self, observations: tf.Tensor) -> None:
        """`update` with observations of any leading dimensions ([B, T, ...], [T, B, K, ...]):
        their moments do not depend on the order."""
        observations = tf.convert_to_tensor(observations)
        self.update(tf.reshape(observations, tf.concat([[-1], tf.shape(self.mean)], axis=0)))


def normalizers_of(network: snt.Module) -> list[RunningMeanStd]:
    """The input normalisers inside `network` (none for most networks): what a learner moves
    with the observations it learns from."""
    return [m for m in network.submodules if isinstance(m, RunningMeanStd)]


def observe_inputs(network: snt.Module, observations: tf.Tensor) -> None:
    """Moves every input normaliser inside `network` by `observations` (any leading
    dimensions); nothing for a network without one. A learner calls it once per batch."""
    for normalizer in normalizers_of(network):
        normalizer.update_from(observations)
