"""Importance weights that correct prioritized sampling (Schaul et al., 2016)."""

from __future__ import annotations

import tensorflow as tf


def importance_weights(probabilities: tf.Tensor, exponent: float) -> tf.Tensor:
    """w_i = (1 / (N P(i)))^beta / max_j w_j for the sampled items' probabilities P(i).

    The 1/N cancels under the normalisation by the largest weight, so the
    table size is not needed; beta = 0 gives weights of 1 (uniform replay).
    """
    weights = tf.pow(1.0 / tf.cast(probabilities, tf.float32), exponent)
    return weights / tf.reduce_max(weights)
