"""D4PG: actions always inside the spec, the learner's losses, and learning through threads."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from agentkit.config import ConfigError
from agentkit.specs import make_environment_spec
from agentkit.types import Transition
from agents.d4pg import D4PGBuilder, D4PGConfig
from launch_programs.summary import evaluation_stats
from tests import fakes
from tests.agents.threads import learn_through_threads

SMALL = dict(policy_hidden_sizes=(32,), critic_hidden_sizes=(32,), batch_size=16,
             min_replay_size=16)


@pytest.mark.parametrize("field,value", [
    ("n_step", 0), ("num_atoms", 1), ("v_max", -2000.0), ("sigma", -0.1), ("batch_size", 0),
    ("target_update_tau", 1.5),
])
def test_bad_config_values_name_their_field(field, value):
    with pytest.raises(ConfigError, match=f"--{field}: must be"):
        D4PGConfig(**{field: value})


def test_discrete_actions_are_refused_with_a_clear_error():
    spec = make_environment_spec(fakes.match_the_sign())
    with pytest.raises(ValueError, match="bounded continuous actions"):
        D4PGBuilder(D4PGConfig(**SMALL)).make_networks(spec=spec)


def test_the_actor_never_emits_an_action_outside_the_spec():
    spec = make_environment_spec(fakes.continuous_environment(action_dim=3))
    builder = D4PGBuilder(D4PGConfig(**SMALL))
    networks = builder.make_networks(spec=spec)
    for v in networks["policy"].variables:  # Saturate the policy: tanh at +-1.
        v.assign(v * 100.0)
    observations = np.random.default_rng(0).normal(size=(512, 4)).astype(np.float32) * 10
    greedy = builder.make_policy(networks=networks, spec=spec, evaluation=True)(observations).numpy()
    noisy_policy = builder.make_policy(networks=networks, spec=spec, seed=1)
    noisy_policy._noise_scale = tf.constant(50.0)  # Noise far beyond the bounds.
    noisy = np.concatenate([noisy_policy(observations).numpy() for _ in range(10)])
    for actions in (greedy, noisy):
        assert actions.shape[-1] == 3 and actions.dtype == np.float32
        assert actions.min() >= -1.0 and actions.max() <= 1.0
    assert (np.abs(noisy) == 1.0).mean() > 0.5  # The noise did push past the bounds.
    assert noisy_policy.num_traces == 1  # Compiled once.


def test_exploration_noise_scales_with_the_action_range():
    spec = make_environment_spec(fakes.continuous_environment(action_dim=1))
    builder = D4PGBuilder(D4PGConfig(sigma=0.2, **SMALL))
    networks = builder.make_networks(spec=spec)
    for v in networks["policy"].variables:
        v.assign(tf.zeros_like(v))  # pi(o) = 0: the actions are the noise.
    actions = builder.make_policy(networks=networks, spec=spec, seed=3)(np.zeros((20000, 4), np.float32))
    assert np.std(actions.numpy()) == pytest.approx(0.2, rel=0.05)  # Range [-1, 1]: half = 1.


def _batches(poisoned_index: int, count: int):
    """`count` replay samples of 8 random transitions; the one at `poisoned_index` has a NaN."""
    import reverb

    rng = np.random.default_rng(0)
    batch = 8
    info = reverb.SampleInfo(key=tf.cast(tf.range(batch), tf.uint64),
                             probability=tf.fill([batch], tf.constant(1 / batch, tf.float64)),
                             table_size=tf.fill([batch], tf.constant(batch, tf.int64)),
                             priority=tf.ones([batch], tf.float64),
                             times_sampled=tf.ones([batch], tf.int32))
    samples = []
    for i in range(count):
        reward = rng.uniform(-1, 0, batch).astype(np.float32)
        if i == poisoned_index:
            reward[3] = np.nan
        data = Transition(rng.uniform(-1, 1, (batch, 2)).astype(np.float32),
                          rng.uniform(-1, 1, (batch, 1)).astype(np.float32),
                          reward, np.full(batch, 0.9, np.float32),
                          rng.uniform(-1, 1, (batch, 2)).astype(np.float32))
        samples.append(reverb.ReplaySample(info, data))
    return samples


def test_a_compiled_loop_of_three_batches_stops_at_a_nan_one_and_keeps_the_two_before():
    from agentkit.counting import Counter
    from components.learners import NonFiniteLossError

    spec = make_environment_spec(fakes.match_the_value())
    builder = D4PGBuilder(D4PGConfig(**SMALL, batches_per_call=3))
    samples = _batches(poisoned_index=2, count=4)
    single = builder.make_learner(networks=builder.make_networks(spec=spec), spec=spec,
                                  iterator=iter(()), replay_address=None)
    counter = Counter(prefix="learner")
    looped = builder.make_learner(networks=builder.make_networks(spec=spec), spec=spec,
                                  iterator=fakes.sample_iterator(samples), replay_address=None,
                                  counter=counter)
    looped.restore(single.save())
    for sample in samples[:2]:
        single._step_fn(sample)
    with pytest.raises(NonFiniteLossError, match="learner step 3: loss term 'critic_loss' is nan"):
        looped.step()
    assert looped._step_loop._compiled
    assert looped.num_steps == 2 and counter.get_counts()["learner_steps"] == 2
    for name, value in single.save().items():  # The two good batches, as two single steps.
        np.testing.assert_allclose(looped.save()[name], value, rtol=1e-5, atol=1e-6)
    looped.step()  # Goes on with the batch after the NaN one (the last).
    assert looped.num_steps == 3


def test_a_nan_batch_stops_the_learner_naming_the_term_and_changes_nothing():
    from components.learners import NonFiniteLossError

    spec = make_environment_spec(fakes.match_the_value())
    builder = D4PGBuilder(D4PGConfig(**SMALL))
    networks = builder.make_networks(spec=spec)
    learner = builder.make_learner(networks=networks, spec=spec, iterator=iter(()), replay_address=None)
    learner._iterator = iter(_batches(poisoned_index=1, count=2))
    learner.step()
    before = learner.save()
    with pytest.raises(NonFiniteLossError, match="learner step 2: loss term 'critic_loss' is nan"):
        learner.step()
    after = learner.save()
    for name in before:
        np.testing.assert_array_equal(before[name], after[name])


def test_d4pg_learns_match_the_value_through_threads(tmp_path):
    config = D4PGConfig(policy_hidden_sizes=(64,), critic_hidden_sizes=(64,), batch_size=64,
                        min_replay_size=200, samples_per_insert=16.0, n_step=1, discount=0.0,
                        v_min=-4.0, v_max=0.5, variable_update_period=20, sigma=0.3,
                        policy_learning_rate=1e-3, critic_learning_rate=1e-3)
    learn_through_threads(D4PGBuilder, config, fakes.match_the_value, tmp_path)
    # Random actions score about -6.7 per 10-step episode; the learned policy close to 0.
    assert evaluation_stats(str(tmp_path))["eval_return_mean_last10"] >= -0.5
