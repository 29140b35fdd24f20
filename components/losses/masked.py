"""Means over the steps a mask keeps: learners of unrolls and rollouts average only the steps
where an action was taken (mask 1), not padding or an episode's reset step."""

from __future__ import annotations

import tensorflow as tf


def masked_mean(x, mask) -> tf.Tensor:
    """sum(x * mask) / max(sum(mask), 1): the mean over the kept steps (0 when none is kept)."""
    mask = tf.convert_to_tensor(mask, dtype=tf.float32)
    return tf.reduce_sum(tf.convert_to_tensor(x, tf.float32) * mask) / tf.maximum(
        tf.reduce_sum(mask), 1.0)
