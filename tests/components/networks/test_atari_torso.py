"""The Nature torso in float32 and in bfloat16 compute on float32 weights."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import tensorflow as tf

from agentkit.config import ConfigError
from agents.dqn import DQNConfig
from components.networks.atari import AtariTorso


def _pair():
    frames = tf.constant(np.random.default_rng(0).integers(0, 255, (4, 84, 84, 4), np.uint8))
    full, half = AtariTorso(), AtariTorso("bfloat16")
    full(frames), half(frames)
    for a, b in zip(full.variables, half.variables):
        b.assign(a)
    return frames, full, half


def test_bfloat16_features_match_float32_on_float32_weights():
    frames, full, half = _pair()
    assert [v.dtype for v in half.variables] == [tf.float32] * 6
    a, b = full(frames).numpy(), half(frames).numpy()
    assert b.dtype == np.float32 and b.shape == a.shape == (4, 3136)
    assert np.abs(a - b).max() <= 0.02 * np.abs(a).max()  # bfloat16 keeps 8 bits of mantissa.
    assert np.abs(a - b).max() > 0  # It did compute in bfloat16.


def test_bfloat16_gradients_reach_the_float32_weights():
    frames, full, half = _pair()
    grads = []
    for torso in (full, half):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(torso(frames) ** 2)
        grads.append(tape.gradient(loss, torso.trainable_variables))
    for a, b in zip(*grads):
        assert b.dtype == tf.float32
        cosine = tf.reduce_sum(a * b) / (tf.norm(a) * tf.norm(b))
        assert float(cosine) > 0.99


def test_a_bad_compute_dtype_fails():
    with pytest.raises(ValueError, match="compute_dtype must be one of"):
        AtariTorso("float16")
    with pytest.raises(ConfigError, match="^--compute_dtype: must be one of float32, bfloat16"):
        DQNConfig(compute_dtype="float16")


def test_policy_value_networks_compute_in_the_configured_dtype():
    """IMPALA's (and APPO's) `compute_dtype` reaches the Nature torso of its network."""
    from agentkit.specs import make_environment_spec
    from agents.impala.config import IMPALAConfig
    from agents.impala.networks import make_networks
    from tests import fakes

    spec = make_environment_spec(fakes.fake_atari())
    frames = tf.constant(np.random.default_rng(1).integers(0, 255, (3, 84, 84, 4), np.uint8))
    full = make_networks(spec, IMPALAConfig.atari(torso="atari"))["policy"]
    half = make_networks(spec, IMPALAConfig.atari(torso="atari", compute_dtype="bfloat16"))[
        "policy"]
    for a, b in zip(full.variables, half.variables):
        b.assign(a)
    (logits_a, _), (logits_b, value_b) = full(frames), half(frames)
    assert logits_b.dtype == value_b.dtype == tf.float32
    diff = np.abs(logits_a.numpy() - logits_b.numpy()).max()
    assert 0 < diff <= 0.05 * np.abs(logits_a.numpy()).max()
    with pytest.raises(ConfigError, match="^--compute_dtype: must be one of float32, bfloat16"):
        IMPALAConfig(compute_dtype="float16")


def test_the_shallow_torso_is_chosen_by_name_and_gives_its_features():
    from dm_env import specs

    from agentkit.specs import EnvironmentSpec
    from components.networks.torso import make_torso

    spec = EnvironmentSpec(specs.Array((84, 84, 4), np.uint8), specs.DiscreteArray(6),
                           specs.Array((), np.float32), specs.BoundedArray((), np.float32, 0, 1))
    frames = tf.zeros((2, 84, 84, 4), tf.uint8)
    torso = make_torso(spec, "atari_shallow", ())
    assert torso(frames).shape == (2, 9 * 9 * 32)
    assert sorted(tuple(v.shape) for v in torso.trainable_variables) == sorted(
        [(8, 8, 4, 16), (16,), (4, 4, 16, 32), (32,)])
    small = dataclasses.replace(spec, observations=specs.Array((10, 10, 4), np.uint8))
    with pytest.raises(ConfigError, match="--torso: 'atari_shallow' needs"):
        make_torso(small, "atari_shallow", ())


def test_normalised_inputs_are_taken_as_they_are_and_raw_pixels_divided_by_255():
    from dm_env import specs

    from agentkit.specs import EnvironmentSpec
    from components.networks.torso import make_torso

    spec = EnvironmentSpec(specs.Array((84, 84, 4), np.uint8), specs.DiscreteArray(6),
                           specs.Array((), np.float32), specs.BoundedArray((), np.float32, 0, 1))
    pixels = np.random.default_rng(1).integers(0, 255, (2, 84, 84, 4)).astype(np.uint8)
    raw, normalized = (make_torso(spec, "atari_shallow", (), normalized_inputs=flag)
                       for flag in (False, True))
    raw(tf.constant(pixels)), normalized(tf.constant(pixels / 255.0, tf.float32))
    for a, b in zip(raw.variables, normalized.variables):
        b.assign(a)
    # The same weights: raw pixels through x / 255 equal the already scaled ones as they are.
    np.testing.assert_allclose(raw(tf.constant(pixels)).numpy(),
                               normalized(tf.constant(pixels / 255.0, tf.float32)).numpy(),
                               rtol=1e-5, atol=1e-5)
