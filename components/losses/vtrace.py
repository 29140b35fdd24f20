"""V-trace off-policy return targets (Espeholt et al., 2018, IMPALA, arXiv 1802.01561).

Why: in an actor-learner setup the actors act with a behaviour policy mu that lags behind
the learner's target policy pi. V-trace corrects for this lag with truncated importance
weights, giving value targets and policy-gradient advantages that stay stable off-policy.

With rho_t = pi(a_t|x_t) / mu(a_t|x_t), clipped weights rho_t' = min(rho_bar, rho_t) and
c_i = lambda * min(1, rho_i) (lambda = 1 in the paper):

    delta_t = rho_t' * (r_t + gamma_t * V(x_{t+1}) - V(x_t))
    v_s     = V(x_s) + sum_{t>=s} (prod_{i=s}^{t-1} gamma_i * c_i) * delta_t
    A_s     = min(rho_bar_pg, rho_s) * (r_s + gamma_s * v_{s+1} - V(x_s))

computed by the backward recursion v_s - V(x_s) = delta_s + gamma_s * c_s * (v_{s+1} - V(x_{s+1})).
As in DeepMind's scalable_agent / trfl; all tensors are time-major [T, B].
"""

from __future__ import annotations

from typing import NamedTuple

import tensorflow as tf

from components.losses.ranks import check_rank


class VTraceReturns(NamedTuple):
    """V-trace outputs, both [T, B] and treated as constants (no gradient)."""

    vs: tf.Tensor
    pg_advantages: tf.Tensor


def vtrace(
    log_rhos,
    discounts,
    rewards,
    values,
    bootstrap_value,
    clip_rho_threshold: float | None = 1.0,
    clip_pg_rho_threshold: float | None = 1.0,
    lambda_: float = 1.0,
) -> VTraceReturns:
    """V-trace targets and policy-gradient advantages for a time-major unroll.

    Args:
      log_rhos: [T, B] log importance ratios log(pi(a_t|x_t) / mu(a_t|x_t)).
      discounts: [T, B] per-step discounts (gamma times 1 - done).
      rewards: [T, B] rewards.
      values: [T, B] value estimates V(x_t) under the target policy.
      bootstrap_value: [B] value estimate V(x_T) at the end of the unroll.
      clip_rho_threshold: rho_bar, the clip on the importance weights of the value
        targets; None means no clipping.
      clip_pg_rho_threshold: the clip on the importance weights of the policy-gradient
        advantages; None means no clipping.
      lambda_: the traces are c_i = lambda_ * min(1, rho_i); below 1 it trades bias
        for variance, like TD(lambda) (the paper's V-trace is lambda_ = 1).

    Returns:
      VTraceReturns(vs, pg_advantages), both [T, B], with gradients stopped.
    """
    log_rhos = tf.convert_to_tensor(log_rhos, dtype=tf.float32)
    discounts = tf.convert_to_tensor(discounts, dtype=tf.float32)
    rewards = tf.convert_to_tensor(rewards, dtype=tf.float32)
    values = tf.convert_to_tensor(values, dtype=tf.float32)
    bootstrap_value = tf.convert_to_tensor(bootstrap_value, dtype=tf.float32)

    check_rank("vtrace", log_rhos, 2, "log_rhos")
    check_rank("vtrace", discounts, 2, "discounts")
    check_rank("vtrace", rewards, 2, "rewards")
    check_rank("vtrace", values, 2, "values")
    check_rank("vtrace", bootstrap_value, 1, "bootstrap_value")

    with tf.name_scope("vtrace"):
        rhos = tf.exp(log_rhos)
        if clip_rho_threshold is not None:
            clipped_rhos = tf.minimum(tf.constant(clip_rho_threshold, tf.float32), rhos)
        else:
            clipped_rhos = rhos
        cs = lambda_ * tf.minimum(1.0, rhos)

        values_t_plus_1 = tf.concat([values[1:], bootstrap_value[None]], axis=0)
        deltas = clipped_rhos * (rewards + discounts * values_t_plus_1 - values)

        def step(acc, elems):
            delta_t, discount_t, c_t = elems
            return delta_t + discount_t * c_t * acc

        vs_minus_v_xs = tf.scan(
            step,
            elems=(deltas, discounts, cs),
            initializer=tf.zeros_like(bootstrap_value),
            reverse=True,
        )
        vs = vs_minus_v_xs + values

        vs_t_plus_1 = tf.concat([vs[1:], bootstrap_value[None]], axis=0)
        if clip_pg_rho_threshold is not None:
            clipped_pg_rhos = tf.minimum(tf.constant(clip_pg_rho_threshold, tf.float32), rhos)
        else:
            clipped_pg_rhos = rhos
        pg_advantages = clipped_pg_rhos * (rewards + discounts * vs_t_plus_1 - values)

        return VTraceReturns(vs=tf.stop_gradient(vs), pg_advantages=tf.stop_gradient(pg_advantages))
