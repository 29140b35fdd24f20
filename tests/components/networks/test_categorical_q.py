"""CategoricalQHead: per-action return distributions, their means, and the dueling combination."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from components.networks import CategoricalQHead


def _dense(mlp, x):
    """The MLP's output computed by hand from its (single) layer's weights."""
    (layer,) = mlp._layers
    return x @ layer.w.numpy() + layer.b.numpy()


def test_shapes_probabilities_and_means_match_the_formula():
    head = CategoricalQHead(num_actions=3, num_atoms=5, v_min=-2.0, v_max=2.0)
    features = np.random.default_rng(0).normal(size=(4, 6)).astype(np.float32)
    logits = head(features).numpy()
    assert logits.shape == (4, 3, 5)
    expected = _dense(head._advantage, features).reshape(4, 3, 5)
    np.testing.assert_allclose(logits, expected, rtol=1e-5, atol=1e-5)
    probabilities = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    np.testing.assert_allclose(probabilities.sum(-1), 1.0, rtol=1e-6)
    q = head.q_values(tf.constant(logits)).numpy()
    np.testing.assert_allclose(q, (probabilities * np.linspace(-2, 2, 5)).sum(-1), rtol=1e-5,
                               atol=1e-5)
    assert q.shape == (4, 3) and np.all(q >= -2.0) and np.all(q <= 2.0)


def test_dueling_combines_value_and_centred_advantages_per_atom():
    head = CategoricalQHead(num_actions=4, num_atoms=3, dueling=True)
    features = np.random.default_rng(1).normal(size=(2, 5)).astype(np.float32)
    logits = head(features).numpy()
    advantages = _dense(head._advantage, features).reshape(2, 4, 3)
    value = _dense(head._value, features)[:, None, :]
    expected = value + advantages - advantages.mean(axis=1, keepdims=True)
    np.testing.assert_allclose(logits, expected, rtol=1e-5, atol=1e-5)
    # The mean over actions of the logits is the value stream, atom by atom.
    np.testing.assert_allclose(logits.mean(axis=1), value[:, 0], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kwargs, message", [
    ({"num_actions": 0}, "num_actions"),
    ({"num_actions": 2, "num_atoms": 1}, "num_atoms >= 2"),
    ({"num_actions": 2, "v_min": 1.0, "v_max": 1.0}, "v_min < v_max"),
])
def test_bad_arguments_fail_clearly(kwargs, message):
    with pytest.raises(ValueError, match=message):
        CategoricalQHead(**kwargs)
