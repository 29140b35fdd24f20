"""PPO's clipped surrogate objective (Schulman et al., 2017, arXiv 1707.06347).

Why: a plain importance-weighted policy gradient, r_t * A_t with
r_t = pi(a_t|x_t) / pi_old(a_t|x_t), lets one batch push the policy arbitrarily far
from the one that collected it. Clipping the ratio to [1 - eps, 1 + eps] and taking
the pessimistic minimum removes the incentive to move past the clip:

    L = -mean_t min(r_t * A_t, clip(r_t, 1 - eps, 1 + eps) * A_t)

For A_t > 0 the term stops growing once r_t > 1 + eps; for A_t < 0 it stops
shrinking once r_t < 1 - eps. There its gradient w.r.t. r_t is zero; on the
other side (say r_t > 1 + eps with A_t < 0) the unclipped term is the minimum and
the gradient stays, so a step that made things worse is always undone.
"""

from __future__ import annotations

import tensorflow as tf

from components.losses.masked import masked_mean


def clipped_surrogate_loss(ratios, advantages, epsilon: float, mask=None) -> tf.Tensor:
    """The scalar to minimise, -mean(min(r A, clip(r, 1 - eps, 1 + eps) A)).

    Args:
      ratios: importance ratios pi(a|x) / pi_old(a|x), any shape (e.g. [T, B]).
      advantages: advantages of the same shape; treated as constants.
      epsilon: the clip range eps > 0.
      mask: optional weights of the same shape (1: a step to learn from, 0: padding); the
        mean is then over the weighted steps. Static shapes, unlike a boolean mask: the
        loss compiles with XLA.

    Returns:
      A float32 scalar.
    """
    ratios = tf.convert_to_tensor(ratios, dtype=tf.float32)
    advantages = tf.stop_gradient(tf.convert_to_tensor(advantages, dtype=tf.float32))
    if not ratios.shape.is_compatible_with(advantages.shape):
        raise ValueError(
            f"clipped_surrogate_loss: ratios and advantages must have the same shape, "
            f"got {ratios.shape} and {advantages.shape}."
        )
    with tf.name_scope("clipped_surrogate_loss"):
        clipped = tf.clip_by_value(ratios, 1.0 - epsilon, 1.0 + epsilon)
        surrogate = tf.minimum(ratios * advantages, clipped * advantages)
        if mask is None:
            return -tf.reduce_mean(surrogate)
        return -masked_mean(surrogate, mask)
