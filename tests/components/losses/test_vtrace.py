"""V-trace against plain numpy references: n-step returns, the paper's sum, clipping, no gradient."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from components.losses.vtrace import VTraceReturns, vtrace

T, B = 5, 3


def _random_inputs(seed: int, t: int = T, b: int = B, log_rho_range: float = 2.0):
    rng = np.random.default_rng(seed)
    log_rhos = rng.uniform(-log_rho_range, log_rho_range, size=(t, b)).astype(np.float32)
    discounts = np.full((t, b), 0.9, dtype=np.float32)
    discounts[2, 1] = 0.0  # an episode ends mid-unroll in column 1
    discounts[0, 2] = 0.0  # and right at the start in column 2
    rewards = rng.normal(size=(t, b)).astype(np.float32)
    values = rng.normal(size=(t, b)).astype(np.float32)
    bootstrap_value = rng.normal(size=(b,)).astype(np.float32)
    return log_rhos, discounts, rewards, values, bootstrap_value


def _run(log_rhos, discounts, rewards, values, bootstrap_value, **kwargs):
    out = vtrace(
        tf.constant(log_rhos),
        tf.constant(discounts),
        tf.constant(rewards),
        tf.constant(values),
        tf.constant(bootstrap_value),
        **kwargs,
    )
    return out.vs.numpy(), out.pg_advantages.numpy()


def _nstep_returns(discounts, rewards, bootstrap_value):
    """Discounted returns to the end of the unroll, bootstrapped from bootstrap_value."""
    t_len = rewards.shape[0]
    returns = np.zeros_like(rewards, dtype=np.float64)
    for s in range(t_len):
        ret = np.zeros(rewards.shape[1], dtype=np.float64)
        scale = np.ones(rewards.shape[1], dtype=np.float64)
        for t in range(s, t_len):
            ret += scale * rewards[t]
            scale *= discounts[t]
        returns[s] = ret + scale * bootstrap_value
    return returns


def _reference_vtrace(log_rhos, discounts, rewards, values, bootstrap_value, clip_rho, clip_pg_rho):
    """Straight from the paper: v_s = V(x_s) + sum_t (prod gamma_i c_i) delta_t, no recursion."""
    log_rhos, discounts, rewards, values, bootstrap_value = (
        np.asarray(x, dtype=np.float64) for x in (log_rhos, discounts, rewards, values, bootstrap_value)
    )
    t_len = rewards.shape[0]
    rhos = np.exp(log_rhos)
    clipped_rhos = rhos if clip_rho is None else np.minimum(clip_rho, rhos)
    cs = np.minimum(1.0, rhos)
    next_values = np.concatenate([values[1:], bootstrap_value[None]], axis=0)
    deltas = clipped_rhos * (rewards + discounts * next_values - values)

    vs = np.zeros_like(values)
    for s in range(t_len):
        total = np.zeros_like(bootstrap_value)
        for t in range(s, t_len):
            weight = np.prod(discounts[s:t] * cs[s:t], axis=0)  # empty product = 1 when t == s
            total += weight * deltas[t]
        vs[s] = values[s] + total

    next_vs = np.concatenate([vs[1:], bootstrap_value[None]], axis=0)
    pg_rhos = rhos if clip_pg_rho is None else np.minimum(clip_pg_rho, rhos)
    pg_advantages = pg_rhos * (rewards + discounts * next_vs - values)
    return vs, pg_advantages


def test_on_policy_vs_are_nstep_bootstrapped_returns():
    _, discounts, rewards, values, bootstrap_value = _random_inputs(seed=0)
    log_rhos = np.zeros((T, B), dtype=np.float32)

    vs, pg_advantages = _run(log_rhos, discounts, rewards, values, bootstrap_value)

    expected = _nstep_returns(discounts, rewards, bootstrap_value)
    np.testing.assert_allclose(vs, expected, atol=1e-5, rtol=0)
    # The zero discount cuts the return: column 1 from step 2 is just r_2, whatever follows.
    np.testing.assert_allclose(vs[2, 1], rewards[2, 1], atol=1e-6, rtol=0)
    # On-policy the advantage is the one-step TD error on the v-trace target.
    next_vs = np.concatenate([expected[1:], bootstrap_value[None]], axis=0)
    np.testing.assert_allclose(pg_advantages, rewards + discounts * next_vs - values, atol=1e-5, rtol=0)


@pytest.mark.parametrize("clip", [1.0, None])
@pytest.mark.parametrize("seed", [1, 2])
def test_matches_paper_definition(clip, seed):
    inputs = _random_inputs(seed=seed)

    vs, pg_advantages = _run(*inputs, clip_rho_threshold=clip, clip_pg_rho_threshold=clip)

    ref_vs, ref_pg = _reference_vtrace(*inputs, clip_rho=clip, clip_pg_rho=clip)
    np.testing.assert_allclose(vs, ref_vs, atol=1e-5, rtol=1e-5)
    np.testing.assert_allclose(pg_advantages, ref_pg, atol=1e-5, rtol=1e-5)


def test_clip_thresholds_differ_from_each_other():
    inputs = _random_inputs(seed=3)

    vs, pg_advantages = _run(*inputs, clip_rho_threshold=0.5, clip_pg_rho_threshold=2.0)

    ref_vs, ref_pg = _reference_vtrace(*inputs, clip_rho=0.5, clip_pg_rho=2.0)
    np.testing.assert_allclose(vs, ref_vs, atol=1e-5, rtol=1e-5)
    np.testing.assert_allclose(pg_advantages, ref_pg, atol=1e-5, rtol=1e-5)


def test_large_rhos_are_clipped_to_on_policy():
    _, discounts, rewards, values, bootstrap_value = _random_inputs(seed=4)
    zeros = np.zeros((T, B), dtype=np.float32)
    large = np.full((T, B), 3.0, dtype=np.float32)

    vs_on, pg_on = _run(zeros, discounts, rewards, values, bootstrap_value)
    vs_large, pg_large = _run(large, discounts, rewards, values, bootstrap_value)
    _, pg_large_unclipped = _run(
        large, discounts, rewards, values, bootstrap_value, clip_pg_rho_threshold=None
    )

    # min(1, e^3) = 1 for both rho and c, so everything equals the on-policy result.
    np.testing.assert_allclose(vs_large, vs_on, atol=1e-6, rtol=0)
    np.testing.assert_allclose(pg_large, pg_on, atol=1e-6, rtol=0)
    # Without the pg clip (vs still clipped), the advantages scale by exactly e^3.
    np.testing.assert_allclose(pg_large_unclipped, np.exp(3.0) * pg_large, atol=1e-5, rtol=1e-5)
    assert np.all(np.abs(pg_large) > 1e-3)  # so the ratio check above is not vacuous


def test_small_rhos_are_not_clipped():
    _, discounts, rewards, values, bootstrap_value = _random_inputs(seed=5)
    small = np.full((T, B), -3.0, dtype=np.float32)

    vs_clipped, pg_clipped = _run(small, discounts, rewards, values, bootstrap_value)
    vs_free, pg_free = _run(
        small,
        discounts,
        rewards,
        values,
        bootstrap_value,
        clip_rho_threshold=None,
        clip_pg_rho_threshold=None,
    )

    np.testing.assert_array_equal(vs_clipped, vs_free)
    np.testing.assert_array_equal(pg_clipped, pg_free)
    vs_on, _ = _run(np.zeros_like(small), discounts, rewards, values, bootstrap_value)
    assert not np.allclose(vs_clipped, vs_on)  # the small rhos do change the result


def test_no_gradient_flows_through_outputs():
    log_rhos, discounts, rewards, values, bootstrap_value = (
        tf.constant(x) for x in _random_inputs(seed=6)
    )
    values = tf.Variable(values)

    with tf.GradientTape() as tape:
        out = vtrace(log_rhos, discounts, rewards, values, bootstrap_value)
        total = tf.reduce_sum(out.vs) + tf.reduce_sum(out.pg_advantages)

    assert isinstance(out, VTraceReturns)
    assert tape.gradient(total, values) is None


def test_works_under_tf_function_with_variable_unroll_length():
    spec = tf.TensorSpec([None, None], tf.float32)
    compiled = tf.function(
        vtrace, input_signature=[spec, spec, spec, spec, tf.TensorSpec([None], tf.float32)]
    )

    for t_len, b in [(5, 3), (8, 4)]:
        inputs = _random_inputs(seed=7 + t_len, t=t_len, b=b)
        out = compiled(*(tf.constant(x) for x in inputs))
        ref_vs, ref_pg = _reference_vtrace(*inputs, clip_rho=1.0, clip_pg_rho=1.0)
        assert out.vs.shape == (t_len, b)
        np.testing.assert_allclose(out.vs.numpy(), ref_vs, atol=1e-5, rtol=1e-5)
        np.testing.assert_allclose(out.pg_advantages.numpy(), ref_pg, atol=1e-5, rtol=1e-5)
    assert compiled.experimental_get_tracing_count() == 1  # one trace serves both lengths


def test_bad_ranks_raise():
    log_rhos, discounts, rewards, values, bootstrap_value = (
        tf.constant(x) for x in _random_inputs(seed=8)
    )
    with pytest.raises(ValueError, match="log_rhos must have rank 2"):
        vtrace(log_rhos[0], discounts, rewards, values, bootstrap_value)
    with pytest.raises(ValueError, match="bootstrap_value must have rank 1"):
        vtrace(log_rhos, discounts, rewards, values, bootstrap_value[None])


def test_lambda_gives_the_lambda_returns_on_policy():
    rng = np.random.default_rng(7)
    steps, batch, lam = 6, 2, 0.8
    rewards = rng.normal(size=(steps, batch)).astype(np.float32)
    discounts = np.full((steps, batch), 0.9, np.float32)
    discounts[3, 0] = 0.0  # An episode end inside the unroll.
    values = rng.normal(size=(steps, batch)).astype(np.float32)
    bootstrap = rng.normal(size=(batch,)).astype(np.float32)
    # G_t = r_t + gamma_t ((1 - lambda) V_{t+1} + lambda G_{t+1}), G_T = V_T.
    expected = np.zeros_like(values)
    next_return, next_value = bootstrap.copy(), bootstrap.copy()
    for t in reversed(range(steps)):
        expected[t] = rewards[t] + discounts[t] * ((1 - lam) * next_value + lam * next_return)
        next_return, next_value = expected[t], values[t]
    result = vtrace(np.zeros_like(values), discounts, rewards, values, bootstrap, lambda_=lam)
    np.testing.assert_allclose(result.vs.numpy(), expected, rtol=1e-5, atol=1e-5)
