"""The non-finite guard: a NaN or infinite loss term skips its update and stops the learner."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import tensorflow as tf


class NonFiniteLossError(FloatingPointError):
    """A loss term was NaN or infinite: the update was skipped, the last good state kept."""


def all_finite(tensors) -> tf.Tensor:
    """True when every element of every tensor is finite (for use inside tf.function).

    Scalars (a step's loss terms and norms) are checked in one stacked op.
    """
    tensors = [tf.convert_to_tensor(t) for t in tensors]
    if all(t.shape.rank == 0 for t in tensors):
        return tf.reduce_all(tf.math.is_finite(tf.stack([tf.cast(t, tf.float32)
                                                          for t in tensors])))
    return tf.reduce_all([tf.reduce_all(tf.math.is_finite(t)) for t in tensors])


def check_finite(metrics: Mapping[str, tf.Tensor], terms: Sequence[str], step: int) -> None:
    """Raises NonFiniteLossError naming the first non-finite loss term of a step's metrics."""
    for name in terms:
        value = float(metrics[name])
        if not np.isfinite(value):
            raise NonFiniteLossError(
                f"learner step {step}: loss term '{name}' is {value}; the update was skipped "
                f"and the learner keeps its last good state")
