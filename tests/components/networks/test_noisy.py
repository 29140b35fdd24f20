"""NoisyLinear: initialisation, the noiseless mean, and the factorised noise's mean and variance."""

from __future__ import annotations

import math

import numpy as np
import pytest
import tensorflow as tf

from components.networks import NoisyLinear

IN, OUT = 8, 6
C = math.sqrt(2.0 / math.pi)  # E[f(e)^2] = E|e| for e ~ N(0, 1)
SAMPLES = 4000


def _input(batch=1, seed=0):
    return np.random.default_rng(seed).normal(size=(batch, IN)).astype(np.float32)


def _noiseless(layer, x):
    return x @ layer.mu_w.numpy() + layer.mu_b.numpy()


def _factorised_variance(x, sigma_w, sigma_b):
    """Var(y_j) = c (c sum_i x_i^2 sigma_ij^2 + sigma_bj^2) for one input row x [IN]."""
    return C * (C * (x[:, None] ** 2 * sigma_w ** 2).sum(0) + sigma_b ** 2)


def _samples(layer, x):
    """SAMPLES noisy outputs [SAMPLES, OUT] of one input row, one tf.function call each."""
    call = tf.function(layer.__call__)
    x = tf.constant(x)
    return np.stack([call(x).numpy()[0] for _ in range(SAMPLES)])


def test_shapes_and_initialisation():
    layer = NoisyLinear(OUT)
    x = _input(batch=5)
    assert layer(x).shape == (5, OUT)
    assert layer.mu_w.shape == layer.sigma_w.shape == (IN, OUT)
    assert layer.mu_b.shape == layer.sigma_b.shape == (OUT,)
    bound = 1.0 / math.sqrt(IN)
    for mu in (layer.mu_w.numpy(), layer.mu_b.numpy()):
        assert np.all(np.abs(mu) <= bound) and np.unique(mu).size == mu.size
    np.testing.assert_allclose(layer.sigma_w.numpy(), 0.5 / math.sqrt(IN), rtol=1e-6)
    np.testing.assert_allclose(layer.sigma_b.numpy(), 0.5 / math.sqrt(IN), rtol=1e-6)
    wide = NoisyLinear(200, sigma0=0.3)
    wide(np.ones((1, 400), np.float32))
    mu = wide.mu_w.numpy()
    # U(-1/20, 1/20): the bound is reached and the spread is that of a uniform.
    assert np.abs(mu).max() > 0.049 and np.abs(mu).max() <= 0.05
    np.testing.assert_allclose(mu.std(), 0.05 / math.sqrt(3), rtol=0.02)
    np.testing.assert_allclose(wide.sigma_w.numpy(), 0.3 / 20, rtol=1e-6)
    assert {v.name.split("/")[-1] for v in layer.trainable_variables} == {
        "mu_w:0", "sigma_w:0", "mu_b:0", "sigma_b:0"}
    assert len(layer.variables) == 4  # No RNG state among the (synced, Polyak-averaged) variables.


def test_noiseless_calls_are_deterministic_and_equal_x_mu_plus_b():
    layer = NoisyLinear(OUT)
    x = _input(batch=4)
    first, second = layer(x, noisy=False).numpy(), layer(x, noisy=False).numpy()
    np.testing.assert_array_equal(first, second)
    np.testing.assert_allclose(first, _noiseless(layer, x), rtol=1e-5, atol=1e-6)


def test_noisy_calls_differ_eager_and_under_tf_function_and_share_noise_across_the_batch():
    layer = NoisyLinear(OUT)
    x = np.repeat(_input(), 3, axis=0)  # three identical rows
    call = tf.function(layer.__call__)
    for outputs in ((layer(x).numpy(), layer(x).numpy()), (call(x).numpy(), call(x).numpy())):
        first, second = outputs
        assert np.all(np.abs(first - second) > 1e-6)
        assert np.all(np.abs(first - _noiseless(layer, x)) > 1e-6)
        np.testing.assert_array_equal(first[0], first[1])  # one noise draw per call
        np.testing.assert_array_equal(first[0], first[2])


@pytest.mark.parametrize("random_sigma", [False, True])
def test_noise_mean_and_variance_match_the_factorised_formula(random_sigma):
    tf.random.set_seed(0)  # Deterministic; over 16 seeds the worst unit was 4.2% off.
    layer = NoisyLinear(OUT)
    x = _input(seed=1)
    layer(x)
    if random_sigma:  # Distinct sigmas per weight: catches a transposed or misindexed sigma.
        rng = np.random.default_rng(2)
        layer.sigma_w.assign(rng.uniform(0.05, 0.6, (IN, OUT)).astype(np.float32))
        layer.sigma_b.assign(rng.uniform(0.05, 0.6, OUT).astype(np.float32))
        sigma_w, sigma_b = layer.sigma_w.numpy(), layer.sigma_b.numpy()
    else:  # The paper's initialisation, not read back from the layer: a wrong sigma0 fails here.
        sigma_w, sigma_b = np.full((IN, OUT), 0.5 / math.sqrt(IN)), np.full(OUT, 0.5 / math.sqrt(IN))
    samples = _samples(layer, x)
    expected_var = _factorised_variance(x[0], sigma_w, sigma_b)

    # The mean is the noiseless output, within 5 standard errors per unit.
    mean_error = np.abs(samples.mean(0) - _noiseless(layer, x)[0])
    assert np.all(mean_error < 5 * np.sqrt(expected_var / SAMPLES)), (mean_error, expected_var)

    # The variance is the factorised one, per unit within 12% (about 6 standard errors of the
    # sample variance of 4000 draws).
    np.testing.assert_allclose(samples.var(0), expected_var, rtol=0.12)
    # That tolerance fails the likely mistakes: independent N(0, 1) noise per weight (or f(u) = u)
    # gives sum_i x_i^2 sigma_ij^2 + sigma_bj^2; sigma0 = 0.1 scales the variance by 1 / 25.
    independent = (x[0][:, None] ** 2 * sigma_w ** 2).sum(0) + sigma_b ** 2
    assert np.all(independent / expected_var > 1.4)
    assert np.all(np.abs(samples.var(0) / independent - 1) > 0.2)


def test_the_analytic_variance_agrees_with_a_numpy_monte_carlo():
    rng = np.random.default_rng(3)
    x = rng.normal(size=IN)
    sigma_w, sigma_b = rng.uniform(0.1, 0.5, (IN, OUT)), rng.uniform(0.1, 0.5, OUT)
    noise = rng.normal(size=(1_000_000, IN + OUT))
    f = np.sign(noise) * np.sqrt(np.abs(noise))
    f_in, f_out = f[:, :IN], f[:, IN:]
    noise_part = ((x * f_in) @ sigma_w) * f_out + sigma_b * f_out
    np.testing.assert_allclose(noise_part.var(0), _factorised_variance(x, sigma_w, sigma_b), rtol=0.01)


def test_gradients_reach_mu_and_sigma():
    layer = NoisyLinear(OUT)
    x = _input(batch=5)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(layer(x))
    names = [v.name.split("/")[-1][:-2] for v in layer.trainable_variables]
    gradients = dict(zip(names, tape.gradient(loss, layer.trainable_variables)))
    # d sum_bj y_bj / d mu_ij = sum_b x_bi; / d mu_bj = B.
    np.testing.assert_allclose(gradients["mu_w"].numpy(), np.tile(x.sum(0)[:, None], (1, OUT)),
                               rtol=1e-5)
    np.testing.assert_allclose(gradients["mu_b"].numpy(), np.full(OUT, 5.0), rtol=1e-6)
    assert np.all(gradients["sigma_w"].numpy() != 0) and np.all(gradients["sigma_b"].numpy() != 0)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(layer(x, noisy=False))
    assert tape.gradient(loss, [layer.sigma_w, layer.sigma_b]) == [None, None]


def test_a_seed_makes_initialisation_and_noise_reproducible():
    def run():
        tf.random.set_seed(0)
        layer = NoisyLinear(OUT, seed=7)
        x = _input()
        return layer(x).numpy(), layer(x).numpy(), layer.mu_w.numpy()

    first, second = run(), run()
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(first[0], first[1])


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="output_size"):
        NoisyLinear(0)
    with pytest.raises(ValueError, match="sigma0"):
        NoisyLinear(3, sigma0=-0.1)
