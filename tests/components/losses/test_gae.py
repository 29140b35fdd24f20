"""GAE against numpy references: the lambda-weighted sum, lambda = 1 and 0, a hand case, no gradient."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from components.losses import generalized_advantage_estimation

T, B = 7, 5


def _random_inputs(seed: int):
    rng = np.random.default_rng(seed)
    rewards = rng.normal(size=(T, B)).astype(np.float32)
    discounts = np.full((T, B), 0.97, dtype=np.float32)
    discounts[rng.uniform(size=(T, B)) < 0.25] = 0.0  # episodes end mid-rollout
    discounts[3, 0] = 0.0  # at least one in the middle,
    discounts[T - 1, 1] = 0.0  # one at the last step (the bootstrap value is then unused)
    values = rng.normal(size=(T, B)).astype(np.float32)
    bootstrap_value = rng.normal(size=(B,)).astype(np.float32)
    return rewards, discounts, values, bootstrap_value


def _run(rewards, discounts, values, bootstrap_value, lambda_):
    advantages, returns = generalized_advantage_estimation(
        tf.constant(rewards), tf.constant(discounts), tf.constant(values),
        tf.constant(bootstrap_value), lambda_)
    return advantages.numpy(), returns.numpy()


def _reference_gae(rewards, discounts, values, bootstrap_value, lambda_):
    """A_t = sum_{k>=t} (prod_{i=t}^{k-1} lambda * discount_i) delta_k, summed directly."""
    rewards, discounts, values, bootstrap_value = (
        np.asarray(x, np.float64) for x in (rewards, discounts, values, bootstrap_value))
    next_values = np.concatenate([values[1:], bootstrap_value[None]], axis=0)
    deltas = rewards + discounts * next_values - values
    advantages = np.zeros_like(values)
    t_len = rewards.shape[0]
    for t in range(t_len):
        for k in range(t, t_len):
            advantages[t] += np.prod(lambda_ * discounts[t:k], axis=0) * deltas[k]
    return advantages


def _discounted_returns(rewards, discounts, bootstrap_value):
    """G_t = r_t + discount_t * G_{t+1}, G_T = bootstrap_value: Monte Carlo with a bootstrap."""
    returns = np.zeros(rewards.shape, np.float64)
    following = bootstrap_value.astype(np.float64)
    for t in reversed(range(T)):
        following = rewards[t] + discounts[t] * following
        returns[t] = following
    return returns


@pytest.mark.parametrize("lambda_", [0.0, 0.5, 0.95, 1.0])
def test_matches_the_direct_sum_with_episodes_ending_mid_rollout(lambda_):
    inputs = _random_inputs(seed=1)
    assert (inputs[1][:-1] == 0).sum() >= 3  # several episode ends inside the rollout
    advantages, returns = _run(*inputs, lambda_)
    expected = _reference_gae(*inputs, lambda_)
    np.testing.assert_allclose(advantages, expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(returns, expected + inputs[2], rtol=1e-5, atol=1e-5)
    assert advantages.shape == returns.shape == (T, B)
    assert advantages.dtype == returns.dtype == np.float32


def test_lambda_one_is_discounted_returns_minus_values():
    rewards, discounts, values, bootstrap_value = _random_inputs(seed=2)
    advantages, returns = _run(rewards, discounts, values, bootstrap_value, 1.0)
    mc = _discounted_returns(rewards, discounts, bootstrap_value)
    np.testing.assert_allclose(returns, mc, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(advantages, mc - values, rtol=1e-5, atol=1e-5)


def test_lambda_zero_is_the_one_step_td_error():
    rewards, discounts, values, bootstrap_value = _random_inputs(seed=3)
    advantages, returns = _run(rewards, discounts, values, bootstrap_value, 0.0)
    next_values = np.concatenate([values[1:], bootstrap_value[None]], axis=0)
    np.testing.assert_allclose(advantages, rewards + discounts * next_values - values,
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(returns, rewards + discounts * next_values, rtol=1e-5, atol=1e-5)


def test_hand_computed_case():
    # T = 3, B = 1, gamma = 0.9, lambda = 0.5; the episode ends after step 1 (discount_1 = 0).
    rewards = np.array([[1.0], [2.0], [3.0]], np.float32)
    discounts = np.array([[0.9], [0.0], [0.9]], np.float32)
    values = np.array([[0.5], [1.0], [2.0]], np.float32)
    bootstrap_value = np.array([4.0], np.float32)
    # delta_0 = 1 + 0.9 * 1 - 0.5 = 1.4;  delta_1 = 2 + 0 * 2 - 1 = 1;  delta_2 = 3 + 0.9 * 4 - 2 = 4.6
    # A_2 = 4.6;  A_1 = 1 + 0 * 0.5 * 4.6 = 1;  A_0 = 1.4 + 0.9 * 0.5 * 1 = 1.85
    advantages, returns = _run(rewards, discounts, values, bootstrap_value, 0.5)
    np.testing.assert_allclose(advantages[:, 0], [1.85, 1.0, 4.6], rtol=1e-6)
    np.testing.assert_allclose(returns[:, 0], [2.35, 2.0, 6.6], rtol=1e-6)


def test_no_gradient_flows_through_the_outputs():
    rewards, discounts, values, bootstrap_value = (tf.Variable(x) for x in _random_inputs(seed=4))
    with tf.GradientTape(persistent=True) as tape:
        advantages, returns = generalized_advantage_estimation(
            rewards, discounts, values, bootstrap_value, 0.9)
        total = tf.reduce_sum(advantages) + tf.reduce_sum(returns)
    sources = [rewards, discounts, values, bootstrap_value]
    for gradient in tape.gradient(total, sources):
        assert gradient is None or np.all(gradient.numpy() == 0)


def test_works_inside_tf_function_with_an_unknown_length():
    inputs = _random_inputs(seed=5)
    traced = tf.function(
        lambda r, d, v, b: generalized_advantage_estimation(r, d, v, b, 0.8),
        input_signature=[tf.TensorSpec([None, None], tf.float32)] * 3
        + [tf.TensorSpec([None], tf.float32)])
    advantages, returns = traced(*(tf.constant(x) for x in inputs))
    np.testing.assert_allclose(advantages.numpy(), _reference_gae(*inputs, 0.8), rtol=1e-5,
                               atol=1e-5)
    # A shorter rollout through the same trace.
    short = [x[:3] for x in inputs[:3]] + [inputs[3]]
    advantages, _ = traced(*(tf.constant(x) for x in short))
    assert advantages.shape == (3, B)
    np.testing.assert_allclose(advantages.numpy(), _reference_gae(*short, 0.8), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("bad", ["rewards", "discounts", "values", "bootstrap_value"])
def test_wrong_ranks_name_the_argument(bad):
    inputs = dict(zip(["rewards", "discounts", "values", "bootstrap_value"], _random_inputs(seed=6)))
    inputs[bad] = inputs[bad][..., None]
    with pytest.raises(ValueError, match=f"{bad} must have rank"):
        generalized_advantage_estimation(lambda_=0.9, **inputs)
