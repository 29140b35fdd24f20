"""Generalized advantage estimation (Schulman et al., 2016, arXiv 1506.02438).

Why: a policy gradient needs an estimate of how much better an action was than the
policy's average. The one-step TD error is low-variance but biased by the critic;
the Monte Carlo return is unbiased but noisy. GAE blends all n-step estimates with
geometrically decaying weights lambda^n, so lambda trades one for the other.

With discount_t = gamma * (1 - done_t) for the transition t -> t+1 and V(x_T) the
bootstrap value after the last step:

    delta_t = r_t + discount_t * V(x_{t+1}) - V(x_t)
    A_t     = sum_{k>=t} (prod_{i=t}^{k-1} discount_i * lambda) * delta_k
            = delta_t + discount_t * lambda * A_{t+1},      A_T = 0
    G_t     = A_t + V(x_t)                                  (the lambda-return)

A zero discount ends an episode inside the rollout: it cuts both the bootstrap in
delta_t and the recursion, so nothing flows back across an episode boundary.
lambda = 1 gives the bootstrapped Monte Carlo return minus V(x_t); lambda = 0 gives
delta_t. All tensors are time-major [T, B].
"""

from __future__ import annotations

import tensorflow as tf

from components.losses.ranks import check_rank


def generalized_advantage_estimation(
    rewards,
    discounts,
    values,
    bootstrap_value,
    lambda_: float,
) -> tuple[tf.Tensor, tf.Tensor]:
    """GAE(lambda) advantages and lambda-returns for a time-major rollout.

    Args:
      rewards: [T, B] rewards r_t of the transitions t -> t+1.
      discounts: [T, B] discount_t = gamma * (1 - done_t); 0 ends an episode at step t.
      values: [T, B] value estimates V(x_t).
      bootstrap_value: [B] value estimate V(x_T) after the last step.
      lambda_: the GAE lambda in [0, 1]; 0 is the one-step TD error, 1 Monte Carlo.

    Returns:
      (advantages, returns), both [T, B] float32, with gradients stopped;
      returns = advantages + values.
    """
    rewards = tf.convert_to_tensor(rewards, dtype=tf.float32)
    discounts = tf.convert_to_tensor(discounts, dtype=tf.float32)
    values = tf.convert_to_tensor(values, dtype=tf.float32)
    bootstrap_value = tf.convert_to_tensor(bootstrap_value, dtype=tf.float32)

    check_rank("generalized_advantage_estimation", rewards, 2, "rewards")
    check_rank("generalized_advantage_estimation", discounts, 2, "discounts")
    check_rank("generalized_advantage_estimation", values, 2, "values")
    check_rank("generalized_advantage_estimation", bootstrap_value, 1, "bootstrap_value")

    with tf.name_scope("generalized_advantage_estimation"):
        values_tp1 = tf.concat([values[1:], bootstrap_value[None]], axis=0)
        deltas = rewards + discounts * values_tp1 - values
        traces = discounts * tf.constant(lambda_, tf.float32)

        def step(advantage_tp1, elems):
            delta_t, trace_t = elems
            return delta_t + trace_t * advantage_tp1

        advantages = tf.scan(
            step,
            elems=(deltas, traces),
            initializer=tf.zeros_like(bootstrap_value),
            reverse=True,
        )
        returns = advantages + values
        return tf.stop_gradient(advantages), tf.stop_gradient(returns)
