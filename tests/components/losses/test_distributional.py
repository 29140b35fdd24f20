"""The categorical projection: sums to 1, keeps the mean inside the support, hand cases; and
Rainbow's double-Q loss built on it, against numpy."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from components.losses import categorical_double_q_loss, categorical_projection

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


def _dense_projection(atoms, probs, support):
    """The formula itself: P_j = sum_i p_i clip(1 - |clip(z_i) - s_j| / dz, 0, 1)."""
    clipped = np.clip(atoms, support[0], support[-1])
    weights = np.clip(1 - np.abs(clipped[:, :, None] - support[None, None, :])
                      / (support[1] - support[0]), 0, 1)
    return (probs[:, :, None] * weights).sum(1)


def test_the_scatter_equals_the_dense_formula_and_a_nan_atom_makes_only_its_row_nan():
    rng = np.random.default_rng(7)
    support = np.linspace(-10.0, 10.0, 51).astype(np.float32)
    atoms = rng.uniform(-14, 14, (32, 51)).astype(np.float32)
    atoms[5, :7] = support[10:17]  # On support atoms, and on both ends exactly.
    atoms[6, 0], atoms[6, 1] = support[0], support[-1]
    probs = rng.dirichlet(np.ones(51), 32).astype(np.float32)
    np.testing.assert_allclose(categorical_projection(atoms, probs, support).numpy(),
                               _dense_projection(atoms, probs, support), atol=1e-5)
    atoms[3, 20] = np.nan  # A NaN reward: NaN out, not a silently finite target.
    projected = categorical_projection(atoms, probs, support).numpy()
    assert np.isnan(projected[3]).all()
    assert np.isfinite(np.delete(projected, 3, axis=0)).all()


# categorical_double_q_loss: Rainbow's distributional double-Q cross-entropy.

N_ATOMS = 11
Z = np.linspace(-5.0, 5.0, N_ATOMS)


def _softmax(logits):
    e = np.exp(logits - logits.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _numpy_projection(atoms, probs, support):
    """C51's Algorithm 1: split each clipped atom between floor and ceil of its support index."""
    dz = support[1] - support[0]
    out = np.zeros((atoms.shape[0], support.shape[0]))
    for b in range(atoms.shape[0]):
        for z, p in zip(atoms[b], probs[b]):
            pos = (np.clip(z, support[0], support[-1]) - support[0]) / dz
            lower, upper = int(np.floor(pos)), int(np.ceil(pos))
            if lower == upper:
                out[b, lower] += p
            else:
                out[b, lower] += p * (upper - pos)
                out[b, upper] += p * (pos - lower)
    return out


def _numpy_double_q_target(r_t, discount_t, q_logits_t, q_t_selector, support=Z):
    a_star = q_t_selector.argmax(-1)
    probs = _softmax(q_logits_t[np.arange(len(a_star)), a_star].astype(np.float64))
    atoms = r_t[:, None] + discount_t[:, None] * support[None, :]
    return _numpy_projection(atoms, probs, support)


def _numpy_double_q_loss(q_logits_tm1, a_tm1, r_t, discount_t, q_logits_t, q_t_selector):
    target = _numpy_double_q_target(r_t, discount_t, q_logits_t, q_t_selector)
    log_p = np.log(_softmax(q_logits_tm1[np.arange(len(a_tm1)), a_tm1].astype(np.float64)))
    return -(target * log_p).sum(-1)


def _double_q_inputs(seed, b=6, a=3):
    rng = np.random.default_rng(seed)
    q_logits_tm1 = rng.normal(size=(b, a, N_ATOMS)).astype(np.float32) * 2
    a_tm1 = rng.integers(0, a, size=b).astype(np.int32)
    r_t = rng.uniform(-3, 3, size=b).astype(np.float32)
    r_t[1] = 8.0  # above the support: clipped to its top
    discount_t = np.full(b, 0.9, np.float32)
    discount_t[[0, 1]] = 0.0  # terminal
    q_logits_t = rng.normal(size=(b, a, N_ATOMS)).astype(np.float32) * 2
    q_t_selector = rng.normal(size=(b, a)).astype(np.float32)
    return q_logits_tm1, a_tm1, r_t, discount_t, q_logits_t, q_t_selector


def _double_q(*inputs):
    return categorical_double_q_loss(*(tf.constant(x) for x in inputs),
                                     tf.constant(Z, tf.float32)).numpy()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_double_q_loss_matches_numpy(seed):
    inputs = _double_q_inputs(seed)
    loss = _double_q(*inputs)
    assert loss.shape == (6,)
    np.testing.assert_allclose(loss, _numpy_double_q_loss(*inputs), rtol=1e-5, atol=1e-5)
    assert np.all(loss > 0)


def test_double_q_terminal_puts_all_target_mass_at_the_clipped_reward():
    q_logits_tm1, a_tm1, _, _, q_logits_t, q_t_selector = _double_q_inputs(seed=3, b=3)
    r_t = np.array([2.0, 1.5, 8.0], np.float32)  # on an atom, between atoms 6 and 7, above Z
    discount_t = np.zeros(3, np.float32)
    loss = _double_q(q_logits_tm1, a_tm1, r_t, discount_t, q_logits_t, q_t_selector)
    logits = q_logits_tm1[np.arange(3), a_tm1].astype(np.float64)
    log_p = np.log(_softmax(logits))
    # Z = -5, -4, ..., 5: 2.0 is atom 7; 1.5 splits evenly between atoms 6 and 7; 8 goes to atom 10.
    np.testing.assert_allclose(loss, [-log_p[0, 7], -0.5 * (log_p[1, 6] + log_p[1, 7]), -log_p[2, 10]],
                               rtol=1e-5)
    # The target network's distribution does not matter then.
    other = _double_q(q_logits_tm1, a_tm1, r_t, discount_t, -3 * q_logits_t, q_t_selector)
    np.testing.assert_allclose(other, loss, rtol=1e-6)


def test_double_q_the_selector_not_the_target_logits_picks_the_action():
    q_logits_tm1, a_tm1, _, _, q_logits_t, _ = _double_q_inputs(seed=4)
    r_t = np.linspace(-1.0, 1.0, 6).astype(np.float32)  # targets well inside the support
    discount_t = np.full(6, 0.9, np.float32)
    b = np.arange(6)
    # The target network's own means prefer action 0 (its logits put mass on the top atoms) ...
    q_logits_t = q_logits_t.copy()
    q_logits_t[:, 0, -3:] += 10.0
    target_means = (_softmax(q_logits_t) * Z).sum(-1)
    assert np.all(target_means.argmax(-1) == 0)
    # ... but the selector prefers action 2, then action 1.
    selector = np.tile(np.array([0.0, 1.0, 2.0], np.float32), (6, 1))
    loss = _double_q(q_logits_tm1, a_tm1, r_t, discount_t, q_logits_t, selector)
    log_p = np.log(_softmax(q_logits_tm1[b, a_tm1].astype(np.float64)))
    using = {a: -(_numpy_projection(r_t[:, None] + 0.9 * Z[None, :],
                                    _softmax(q_logits_t[:, a].astype(np.float64)), Z) * log_p).sum(-1)
             for a in range(3)}
    np.testing.assert_allclose(loss, using[2], rtol=1e-5)
    assert np.all(np.abs(loss - using[0]) > 1e-2)
    swapped = _double_q(q_logits_tm1, a_tm1, r_t, discount_t, q_logits_t, selector[:, [0, 2, 1]])
    np.testing.assert_allclose(swapped, using[1], rtol=1e-5)


def test_double_q_gradients_flow_only_into_q_logits_tm1():
    inputs = [tf.Variable(x) for x in _double_q_inputs(seed=5)]
    q_logits_tm1, a_tm1, r_t, discount_t, q_logits_t, q_t_selector = inputs
    with tf.GradientTape(persistent=True) as tape:
        loss = tf.reduce_sum(categorical_double_q_loss(*inputs, tf.constant(Z, tf.float32)))
    for source in (r_t, discount_t, q_logits_t, q_t_selector):
        assert tape.gradient(loss, source) is None
    # d CE / d logits = softmax(logits) - target, on the taken action's row only.
    gradient = tape.gradient(loss, q_logits_tm1).numpy()
    numpy_inputs = _double_q_inputs(seed=5)
    rows = np.arange(6)
    target = _numpy_double_q_target(*numpy_inputs[2:])
    expected = np.zeros_like(gradient)
    expected[rows, numpy_inputs[1]] = _softmax(numpy_inputs[0][rows, numpy_inputs[1]]) - target
    np.testing.assert_allclose(gradient, expected, rtol=1e-4, atol=1e-5)
