"""The categorical projection of C51 and D4PG (Bellemare et al. 2017, Barth-Maron et al. 2018).

A distributional target puts probability p_i on atoms z_i (say r + gamma z
for a critic's fixed support z); those atoms fall between or outside the
support. The projection gives each support atom s_j the mass of every z_i
in proportion to their closeness, after clipping z_i into [s_0, s_{M-1}]:

    P_j = sum_i p_i * clip(1 - |clip(z_i) - s_j| / dz, 0, 1)

Each z_i splits its mass between its two neighbouring support atoms
(exactly one when it lands on one), so the result sums to 1 and keeps the
mean of every distribution that lies within the support.
"""

from __future__ import annotations

import tensorflow as tf


def categorical_projection(target_atoms: tf.Tensor, target_probs: tf.Tensor,
                           support: tf.Tensor) -> tf.Tensor:
    """Projects [B, N] atoms with [B, N] probabilities onto a sorted, evenly spaced [M] support.

    Returns [B, M] probabilities.
    """
    support = tf.convert_to_tensor(support)
    target_atoms = tf.cast(tf.convert_to_tensor(target_atoms), support.dtype)
    target_probs = tf.cast(tf.convert_to_tensor(target_probs), support.dtype)
    delta = support[1] - support[0]
    clipped = tf.clip_by_value(target_atoms, support[0], support[-1])
    # weights[b, i, j] = how much of atom i goes to support atom j.
    distance = tf.abs(clipped[:, :, None] - support[None, None, :])
    weights = tf.clip_by_value(1.0 - distance / delta, 0.0, 1.0)
    return tf.reduce_sum(target_probs[:, :, None] * weights, axis=1)
