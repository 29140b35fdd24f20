"""SAC: the squashed Gaussian's density, actions inside the spec, the temperature steering
the entropy to its target, the losses against a hand computation, and learning through
threads."""

from __future__ import annotations

import math

import numpy as np
import pytest
import tensorflow as tf

from agentkit.config import ConfigError
from agentkit.specs import make_environment_spec
from agentkit.types import Transition
from agents.sac import SACBuilder, SACConfig
from components.networks import TanhGaussianPolicy, squashed_log_prob
from launch_programs.summary import evaluation_stats
from tests import fakes
from tests.agents.threads import learn_through_threads

SMALL = dict(policy_hidden_sizes=(32,), critic_hidden_sizes=(32,), batch_size=16,
             min_replay_size=16)


@pytest.mark.parametrize("field,value", [
    ("n_step", 0), ("batch_size", 0), ("target_update_tau", 0.0), ("initial_temperature", 0.0),
    ("temperature_learning_rate", -1.0), ("min_replay_size", 8)])
def test_bad_config_values_name_their_field(field, value):
    with pytest.raises(ConfigError, match=f"--{field}: must be"):
        SACConfig(**{**SMALL, field: value})


def test_discrete_actions_are_refused_with_a_clear_error():
    spec = make_environment_spec(fakes.match_the_sign())
    with pytest.raises(ValueError, match="bounded continuous actions"):
        SACBuilder(SACConfig(**SMALL)).make_networks(spec=spec)


def test_the_squashed_log_prob_is_the_density_of_tanh_of_a_gaussian():
    """log pi(a) of a = tanh(u), u ~ N(0.3, 0.5^2), against a histogram of 400k draws of a."""
    rng = np.random.default_rng(0)
    u = rng.normal(0.3, 0.5, 400_000)
    a = np.tanh(u)
    counts, edges = np.histogram(a, bins=40, range=(-0.95, 0.95))
    centres = (edges[:-1] + edges[1:]) / 2
    empirical = counts / (len(a) * (edges[1] - edges[0]))
    pre = np.arctanh(centres)[:, None].astype(np.float32)
    log_prob = squashed_log_prob(tf.constant(pre), tf.constant(0.3), tf.constant(math.log(0.5)))
    np.testing.assert_allclose(np.exp(log_prob.numpy()), empirical, rtol=0.05, atol=0.01)
    # Stable far out in tanh's flat ends, where log(1 - tanh(u)^2) would be log(0).
    far = squashed_log_prob(tf.constant([[30.0]]), tf.constant(0.0), tf.constant(0.0))
    assert np.isfinite(far.numpy()).all()


def test_actions_are_inside_the_spec_sampled_or_deterministic():
    spec = make_environment_spec(fakes.continuous_environment(action_dim=3))
    builder = SACBuilder(SACConfig(**SMALL))
    networks = builder.make_networks(spec=spec)
    for v in networks["policy"].variables:  # Saturate: means and sigmas far out.
        v.assign(v * 100.0)
    observations = np.random.default_rng(0).normal(size=(512, 4)).astype(np.float32) * 10
    sampled = builder.make_policy(networks=networks, spec=spec, seed=1)
    mode = builder.make_policy(networks=networks, spec=spec, evaluation=True)
    for actions in (sampled(observations).numpy(), mode(observations).numpy()):
        assert actions.shape == (512, 3) and actions.dtype == np.float32
        assert actions.min() >= -1.0 and actions.max() <= 1.0
    np.testing.assert_array_equal(mode(observations).numpy(), mode(observations).numpy())
    assert sampled.num_traces == 1


def test_actions_map_onto_asymmetric_bounds_and_back():
    from dm_env import specs
    action_spec = specs.BoundedArray((2,), np.float32, [0.0, -2.0], [4.0, 0.0])
    policy = TanhGaussianPolicy(action_spec, (8,))
    squashed = tf.constant([[-1.0, 1.0], [0.0, 0.5]])
    actions = policy.to_action(squashed)
    np.testing.assert_allclose(actions.numpy(), [[0.0, 0.0], [2.0, -0.5]])
    np.testing.assert_allclose(policy.to_squashed(actions).numpy(), squashed.numpy())


def _learner(spec, config, samples):
    builder = SACBuilder(config)
    networks = builder.make_networks(spec=spec)
    learner = builder.make_learner(networks=networks, spec=spec, iterator=iter(samples),
                                   replay_address=None)
    return learner, networks


def _sample(batch, obs_dim=4, action_dim=2, seed=0):
    from reverb import ReplaySample, SampleInfo
    rng = np.random.default_rng(seed)
    data = Transition(
        observation=rng.normal(size=(batch, obs_dim)).astype(np.float32),
        action=rng.uniform(-1, 1, (batch, action_dim)).astype(np.float32),
        reward=rng.normal(size=batch).astype(np.float32),
        discount=np.full(batch, 0.99, np.float32),
        next_observation=rng.normal(size=(batch, obs_dim)).astype(np.float32))
    info = SampleInfo(key=np.arange(batch, dtype=np.uint64),
                      probability=np.full(batch, 1.0, np.float64),
                      table_size=np.full(batch, batch, np.int64),
                      priority=np.ones(batch, np.float64), times_sampled=np.ones(batch, np.int32))
    return ReplaySample(info=info, data=tf.nest.map_structure(tf.constant, data))


def test_the_temperature_falls_while_the_entropy_is_above_its_target_and_rises_below():
    spec = make_environment_spec(fakes.continuous_environment(action_dim=2))
    for target, direction in ((-5.0, -1), (5.0, 1)):  # Far below / above any entropy here.
        config = SACConfig(**SMALL, temperature_learning_rate=1e-2,
                           target_entropy_per_dimension=target)
        learner, _ = _learner(spec, config, [_sample(16, seed=i) for i in range(20)])
        start = float(tf.exp(learner._log_alpha))
        for _ in range(20):
            learner.step()
        moved = float(tf.exp(learner._log_alpha)) - start
        assert np.sign(moved) == direction and abs(moved) > 0.05, (target, moved)
    assert learner.num_steps == 20


def test_the_losses_match_a_hand_computation_and_the_targets_trail():
    spec = make_environment_spec(fakes.continuous_environment(action_dim=2))
    config = SACConfig(**SMALL, initial_temperature=0.5, target_update_tau=0.1)
    sample = _sample(16)
    learner, networks = _learner(spec, config, [sample])
    critic, target, policy = networks["critic"], learner._target_critic, networks["policy"]
    # The learner's two draws, replayed from a copy of its generator.
    rng = tf.random.Generator.from_state(learner._rng.state.numpy(), learner._rng.algorithm)
    outputs = learner.loss(sample)
    t = sample.data
    next_action, next_log_prob = policy.sample(t.next_observation, rng)
    y = t.reward + t.discount * (tf.minimum(*target(t.next_observation, next_action))
                                 - 0.5 * next_log_prob)
    q1, q2 = critic(t.observation, t.action)  # Bounds [-1, 1]: stored actions as they are.
    expected = 0.5 * tf.reduce_mean((q1 - y) ** 2 + (q2 - y) ** 2)
    np.testing.assert_allclose(outputs["critic_loss"].numpy(), expected.numpy(), rtol=1e-5)
    action, log_prob = policy.sample(t.observation, rng)
    expected_policy = tf.reduce_mean(0.5 * log_prob - tf.minimum(*critic(t.observation, action)))
    np.testing.assert_allclose(outputs["policy_loss"].numpy(), expected_policy.numpy(), rtol=1e-5)
    assert outputs["temperature"].numpy() == pytest.approx(0.5)
    before = [v.numpy() for v in target.variables]
    learner.step()
    for b, online, after in zip(before, critic.variables, target.variables):  # Polyak, tau 0.1.
        np.testing.assert_allclose(after.numpy(), 0.9 * b + 0.1 * online.numpy(), rtol=1e-5,
                                   atol=1e-6)
    assert any(not np.allclose(a.numpy(), o.numpy()) for a, o in
               zip(target.variables, critic.variables))  # Trailing, not copied.


def test_sac_learns_match_the_value_through_threads(tmp_path):
    config = SACConfig(policy_hidden_sizes=(64,), critic_hidden_sizes=(64,), batch_size=64,
                       min_replay_size=200, samples_per_insert=32.0, n_step=1, discount=0.0,
                       variable_update_period=20, policy_learning_rate=1e-3,
                       critic_learning_rate=1e-3, temperature_learning_rate=1e-3)
    learn_through_threads(SACBuilder, config, fakes.match_the_value, tmp_path)
    # Random actions score about -6.7 per 10-step episode; the learned mode close to 0.
    assert evaluation_stats(str(tmp_path))["eval_return_mean_last10"] >= -0.5
