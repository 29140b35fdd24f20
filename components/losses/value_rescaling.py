"""Value rescaling (Pohlen et al. 2018, used by R2D2) and its exact inverse.

    h(x)      = sign(x) (sqrt(|x| + 1) - 1) + eps x
    h^-1(x)   = sign(x) (((sqrt(1 + 4 eps (|x| + 1 + eps)) - 1) / (2 eps))^2 - 1)

A learner regresses Q onto h(r + gamma h^-1(Q_target)): returns of very
different scales (Atari scores of 10 or 10,000) become targets of similar
size without clipping rewards, and the eps x term keeps h invertible with a
Lipschitz inverse. Both are computed in forms without cancellation
(sqrt(a) - 1 written as (a - 1) / (sqrt(a) + 1)), so float32 round trips stay
within a few ulps.
"""

from __future__ import annotations

import tensorflow as tf


def signed_hyperbolic(x: tf.Tensor, eps: float = 1e-3) -> tf.Tensor:
    """h(x), elementwise."""
    x = tf.convert_to_tensor(x)
    abs_x = tf.abs(x)
    return tf.sign(x) * abs_x / (tf.sqrt(abs_x + 1.0) + 1.0) + eps * x


def signed_parabolic(x: tf.Tensor, eps: float = 1e-3) -> tf.Tensor:
    """h^-1(x), elementwise: signed_parabolic(signed_hyperbolic(x)) == x."""
    x = tf.convert_to_tensor(x)
    c = tf.abs(x) + 1.0 + eps
    z = 2.0 * c / (tf.sqrt(1.0 + 4.0 * eps * c) + 1.0)  # = (sqrt(1 + 4 eps c) - 1) / (2 eps).
    return tf.sign(x) * (z - 1.0) * (z + 1.0)  # z^2 - 1 without cancelling near z = 1.
