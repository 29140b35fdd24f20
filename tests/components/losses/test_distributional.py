"""The categorical projection: sums to 1, keeps the mean inside the support, hand cases."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from components.losses import categorical_projection

SUPPORT = tf.constant([0.0, 1.0, 2.0, 3.0, 4.0])


def _project(atoms, probs, support=SUPPORT):
    return categorical_projection(tf.constant([atoms], tf.float32),
                                  tf.constant([probs], tf.float32), support).numpy()[0]


def test_hand_computed_cases():
    # An atom on a support atom keeps all its mass there.
    np.testing.assert_allclose(_project([2.0], [1.0]), [0, 0, 1, 0, 0], atol=1e-6)
    # 1.25 splits 0.75 / 0.25 between 1 and 2; 3.5 splits evenly between 3 and 4.
    np.testing.assert_allclose(_project([1.25, 3.5], [0.4, 0.6]),
                               [0, 0.3, 0.1, 0.3, 0.3], atol=1e-6)
    # Atoms outside the support go to its ends.
    np.testing.assert_allclose(_project([-7.0, 9.0, 0.5], [0.2, 0.3, 0.5]),
                               [0.2 + 0.25, 0.25, 0, 0, 0.3], atol=1e-6)


def test_random_targets_sum_to_one_and_keep_the_mean_inside_the_support():
    rng = np.random.default_rng(0)
    support = tf.constant(np.linspace(-10.0, 10.0, 51), tf.float32)
    # D4PG's case: r + gamma * z of the same support, shifted and shrunk.
    rewards = rng.uniform(-2, 2, (64, 1))
    atoms = (rewards + 0.9 * np.linspace(-10.0, 10.0, 51)[None, :]).astype(np.float32)
    logits = rng.normal(size=(64, 51))
    probs = (np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)).astype(np.float32)
    projected = categorical_projection(atoms, probs, support).numpy()
    np.testing.assert_allclose(projected.sum(-1), 1.0, atol=1e-5)
    assert projected.min() >= 0
    inside = (atoms.min(-1) >= -10) & (atoms.max(-1) <= 10)
    assert inside.sum() > 30  # Most are inside; the means of those are kept.
    np.testing.assert_allclose((projected * support.numpy()).sum(-1)[inside],
                               (probs * atoms).sum(-1)[inside], atol=1e-4)


@pytest.mark.parametrize("n", [1, 3, 51])
def test_any_number_of_target_atoms(n):
    rng = np.random.default_rng(n)
    atoms = rng.uniform(-1, 5, (8, n)).astype(np.float32)
    probs = rng.dirichlet(np.ones(n), 8).astype(np.float32)
    projected = categorical_projection(atoms, probs, SUPPORT).numpy()
    assert projected.shape == (8, 5)
    np.testing.assert_allclose(projected.sum(-1), 1.0, atol=1e-5)
