"""The orthogonal initialisation of policy-value networks (A2C/PPO's gains) and the MLP torso's
activation."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from agentkit.config import ConfigError
from agentkit.specs import make_environment_spec
from agents.impala.config import IMPALAConfig
from agents.impala.networks import make_networks
from agents.ppo import PPOBuilder, PPOConfig
from components.networks import MLPTorso
from components.networks.initializers import check_init
from tests import fakes


def _networks():
    spec = make_environment_spec(fakes.fake_atari())
    tf.random.set_seed(0)
    nature = dict(torso="atari", normalize_observations=False)  # The Nature CNN on pixels.
    default = make_networks(spec, IMPALAConfig.atari(network_init="default", **nature))["policy"]
    orthogonal = make_networks(spec, IMPALAConfig.atari(**nature))["policy"]
    return default, orthogonal


def _by_name(network) -> list[tuple[str, np.ndarray]]:  # The three convolutions share a name.
    return [(v.name, v.numpy()) for v in network.trainable_variables]


def _assert_orthogonal(w: np.ndarray, gain: float, atol: float, name: str = "") -> None:
    """Orthogonal along the weight's smaller side (columns of a [fan_in, fan_out] layer with
    fan_in >= fan_out, a convolution's kernel flattened so), each of norm `gain`."""
    flat = w.reshape(-1, w.shape[-1])
    gram = flat.T @ flat if flat.shape[0] >= flat.shape[1] else flat @ flat.T
    np.testing.assert_allclose(gram, gain ** 2 * np.eye(min(flat.shape)), atol=atol,
                               err_msg=name)


def test_orthogonal_weights_have_the_gains_and_zero_biases():
    _, network = _networks()
    weights = [(name, w) for name, w in _by_name(network) if name.endswith("w:0")]
    assert len(weights) == 6  # Three convolutions, the hidden layer, the policy, the value.
    gains = {"policy/w:0": 0.01, "value/w:0": 1.0}
    for name, w in weights:
        gain = next((g for key, g in gains.items() if name.endswith(key)), np.sqrt(2.0))
        assert w.reshape(-1, w.shape[-1]).shape[0] >= w.shape[-1], name  # Columns, as below.
        _assert_orthogonal(w, gain, atol=1e-4 * max(1.0, gain ** 2), name=name)
    for name, b in _by_name(network):
        if name.endswith("b:0"):
            assert not b.any(), name


def test_orthogonal_features_vary_across_frames_and_the_first_policy_is_near_uniform():
    default, orthogonal = _networks()
    frames = tf.constant(np.random.default_rng(0).integers(0, 255, (16, 84, 84, 4), np.uint8))

    def feature_spread(network):  # The shared torso's features' std across the 16 frames.
        return float(tf.reduce_mean(tf.math.reduce_std(network._layers[0](frames), axis=0)))

    assert feature_spread(orthogonal) > 3 * feature_spread(default)  # 8x on Pong frames.
    logits, _ = orthogonal(frames)
    assert float(tf.reduce_max(tf.abs(logits))) < 0.1  # Gain 0.01: entropy near ln 6.


def test_bad_inits_fail_in_one_line():
    with pytest.raises(ValueError, match="init must be one of"):
        check_init("xavier")
    with pytest.raises(ConfigError, match="^--network_init: must be one of default, orthogonal"):
        IMPALAConfig(network_init="xavier")
    with pytest.raises(ConfigError, match="^--activation: must be one of relu, tanh"):
        PPOConfig(activation="gelu")
    with pytest.raises(ValueError, match="activation must be one of relu, tanh"):
        MLPTorso([8], activation="sigmoid")


def _separate_policy_value(**fields):
    spec = make_environment_spec(fakes.discrete_environment(num_actions=2, observation_shape=(4,)))
    tf.random.set_seed(0)
    return PPOBuilder(PPOConfig(**fields)).make_networks(spec=spec)["policy"]


def test_separate_torsos_take_the_orthogonal_gains_of_stable_baselines3():
    network = _separate_policy_value(network_init="orthogonal", activation="tanh")
    for branch, out_gain in ((network._policy, 0.01), (network._value, 1.0)):
        weights = [v.numpy() for v in branch.trainable_variables if v.name.endswith("w:0")]
        # Two hidden layers of 64 at sqrt(2), then the output layer at its own gain.
        assert sorted(w.shape for w in weights) == [(4, 64), (64, 1 if out_gain == 1.0 else 2),
                                                   (64, 64)]
        for w in weights:
            _assert_orthogonal(w, out_gain if w.shape[1] < 64 else np.sqrt(2.0), atol=1e-4)
        assert not any(v.numpy().any() for v in branch.trainable_variables
                       if v.name.endswith("b:0"))
    logits, _ = network(tf.ones((3, 4)))
    assert float(tf.reduce_max(tf.abs(logits))) < 0.1  # A near-uniform first policy.


def test_the_activation_reaches_the_mlp_torso():
    observation = tf.constant([[0.3, -2.0, 1.5, 4.0]])
    tanh = _separate_policy_value(activation="tanh")
    relu = _separate_policy_value(activation="relu")
    tanh_features = tanh._policy._layers[0](observation)
    relu_features = relu._policy._layers[0](observation)
    assert float(tf.reduce_min(tanh_features)) < 0.0  # ReLU features are never negative.
    assert float(tf.reduce_max(tf.abs(tanh_features))) < 1.0
    assert float(tf.reduce_min(relu_features)) >= 0.0
