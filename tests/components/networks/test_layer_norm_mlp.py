"""LayerNormMLP and the D4PG networks built on it: scale-free inputs, centred first actions."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf
from dm_env import specs

from components.networks import DeterministicPolicy, DistributionalCritic, LayerNormMLP


def test_the_output_does_not_depend_on_the_input_scale_at_initialisation():
    # The first layer's bias starts at zero, so LayerNorm(W c x) = LayerNorm(W x):
    # an observation 100 times larger gives the same features.
    tf.random.set_seed(0)
    mlp = LayerNormMLP((32, 16))
    x = tf.random.normal([8, 5])
    np.testing.assert_allclose(mlp(x).numpy(), mlp(100.0 * x).numpy(), atol=1e-3)  # LN epsilon
    assert mlp(x).shape == (8, 16)
    # The first layer is squashed by tanh after the norm: bounded whatever the input.
    first = tf.tanh(mlp._norm(mlp._first(1e6 * x)))  # noqa: SLF001
    assert float(tf.reduce_max(tf.abs(first))) <= 1.0


def test_a_single_layer_and_bad_sizes():
    assert LayerNormMLP((7,))(tf.ones([2, 3])).shape == (2, 7)
    with pytest.raises(ValueError, match="positive integers"):
        LayerNormMLP(())
    with pytest.raises(ValueError, match="positive integers"):
        LayerNormMLP((4, 0))


def test_the_layer_norm_policy_starts_in_the_middle_of_the_action_range():
    spec = specs.BoundedArray((2,), np.float32, minimum=[-2.0, 0.0], maximum=[2.0, 10.0])
    policy = DeterministicPolicy(spec, (32, 32), layer_norm=True)
    actions = policy(tf.random.normal([64, 3]) * 10.0).numpy()
    # tanh(~1e-4 outputs): every first action within 0.1% of the range from its centre.
    np.testing.assert_allclose(actions, np.broadcast_to([0.0, 5.0], actions.shape),
                               atol=1e-3 * 10.0)
    assert actions.shape == (64, 2)


def test_the_layer_norm_critic_gives_logits_over_its_atoms():
    critic = DistributionalCritic((16, 16), v_min=-10.0, v_max=10.0, num_atoms=11,
                                  layer_norm=True)
    logits = critic(tf.random.normal([4, 3]), tf.random.normal([4, 2]))
    assert logits.shape == (4, 11)
    mean = critic.mean(logits).numpy()
    assert np.all((mean >= -10.0) & (mean <= 10.0))
