"""PPO's clipped surrogate: hand cases on both sides of the clip, and where its gradient vanishes."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from components.losses import clipped_surrogate_loss

# (ratio, advantage, the surrogate term min(r A, clip(r) A) with epsilon = 0.2, clipped?)
CASES = [
    (1.5, 1.0, 1.2, True),     # A > 0 and r > 1 + e: the gain is capped at 1.2.
    (0.5, 1.0, 0.5, False),    # A > 0 and r < 1 - e: unclipped, pessimistic.
    (0.5, -1.0, -0.8, True),   # A < 0 and r < 1 - e: capped at -0.8.
    (1.5, -1.0, -1.5, False),  # A < 0 and r > 1 + e: unclipped, the full penalty.
    (1.1, 2.0, 2.2, False),    # Inside the clip range: plain r A.
    (0.9, -3.0, -2.7, False),
]


@pytest.mark.parametrize("ratio, advantage, term, clipped", CASES)
def test_single_terms_by_hand(ratio, advantage, term, clipped):
    loss = clipped_surrogate_loss(tf.constant([ratio]), tf.constant([advantage]), 0.2)
    assert loss.shape == ()
    np.testing.assert_allclose(loss.numpy(), -term, rtol=1e-6)


def test_the_loss_is_minus_the_mean_of_the_terms():
    ratios = np.array([[c[0] for c in CASES]], np.float32).reshape(2, 3)
    advantages = np.array([[c[1] for c in CASES]], np.float32).reshape(2, 3)
    terms = np.array([c[2] for c in CASES])
    loss = clipped_surrogate_loss(ratios, advantages, 0.2)
    np.testing.assert_allclose(loss.numpy(), -terms.mean(), rtol=1e-6)


def test_gradient_is_zero_where_clipped_and_minus_a_over_n_elsewhere():
    ratios = tf.Variable([c[0] for c in CASES])
    advantages = tf.constant([c[1] for c in CASES])
    with tf.GradientTape() as tape:
        loss = clipped_surrogate_loss(ratios, advantages, 0.2)
    gradient = tape.gradient(loss, ratios).numpy()
    n = len(CASES)
    expected = [0.0 if clipped else -advantage / n for _, advantage, _, clipped in CASES]
    np.testing.assert_allclose(gradient, expected, rtol=1e-6, atol=1e-7)
    assert np.all(gradient[[not c[3] for c in CASES]] != 0)


def test_no_gradient_into_the_advantages():
    ratios = tf.constant([1.1, 0.5])
    advantages = tf.Variable([1.0, -1.0])
    with tf.GradientTape() as tape:
        loss = clipped_surrogate_loss(ratios, advantages, 0.2)
    assert tape.gradient(loss, advantages) is None


def test_epsilon_sets_the_clip():
    # r = 1.5, A = 1: capped at 1 + e.
    for epsilon in (0.1, 0.3, 0.6):
        loss = clipped_surrogate_loss([1.5], [1.0], epsilon)
        np.testing.assert_allclose(loss.numpy(), -min(1.5, 1.0 + epsilon), rtol=1e-6)


def test_mismatched_shapes_are_refused():
    with pytest.raises(ValueError, match="same shape"):
        clipped_surrogate_loss(tf.ones([3, 2]), tf.ones([2, 3]), 0.2)
