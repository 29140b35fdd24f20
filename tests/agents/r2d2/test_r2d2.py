"""R2D2: hand-computed targets and priorities, no gradient through burn-in, a memory task learned."""

from __future__ import annotations

import functools
import types

import numpy as np
import pytest
import tensorflow as tf

from agentkit.config import ConfigError
from agentkit.specs import make_environment_spec
from agents.r2d2 import R2D2Builder, R2D2Config
from agents.r2d2.learning import rescaled_n_step_targets, sequence_priorities
from components.environments import make_environment
from components.losses import signed_hyperbolic
from launch_programs.agent_program import ProgramConfig, make_agent_program
from launch_programs.summary import evaluation_stats
from launch_programs.threads import launch_threads
from tests import fakes


def _sample(data, probability=None):
    """What the learner's loss reads of a replay sample: its data and the items' probabilities."""
    size = tf.shape(tf.nest.flatten(data)[0])[0]
    probability = tf.ones([size]) if probability is None else probability
    return types.SimpleNamespace(data=data, info=types.SimpleNamespace(probability=probability))


@pytest.mark.parametrize("field,value", [
    ("sequence_length", 1), ("period", 0), ("period", 21), ("burn_in", 19), ("n_step", 0),
    ("max_priority_weight", 1.5), ("lstm_size", 0), ("min_replay_size", 8),
    ("torso_features", -1), ("compute_dtype", "float16"),
])
def test_bad_config_values_name_their_field(field, value):
    with pytest.raises(ConfigError, match=f"--{field}: must be"):
        R2D2Config(**{field: value})


def test_atari_preset_keeps_r2d2s_parts_at_a_size_two_cores_can_train():
    c = R2D2Config.atari()
    assert (c.sequence_length, c.period, c.burn_in, c.n_step) == (30, 20, 10, 5)
    assert c.trained_steps == c.period  # Each step trained in exactly one sequence ...
    assert c.samples_per_insert == 8.0  # ... 8 times: DQN's replay ratio.
    assert (c.torso, c.torso_features, c.lstm_size, c.compute_dtype) == (
        "atari_shallow", 256, 256, "auto")
    assert (c.priority_exponent, c.importance_sampling_exponent, c.max_priority_weight) == (
        0.9, 0.6, 0.9)
    assert c.epsilon_per_environment
    # The target is copied after as many trained steps as DQN's preset (2,500 x 32).
    assert c.target_update_period * c.batch_size * c.trained_steps == 2_500 * 32


def test_each_environment_of_a_batched_actor_explores_with_its_own_apex_epsilon():
    from agentkit.acting import ActingLayout
    from components.actors import apex_epsilon

    spec = make_environment_spec(fakes.discrete_environment(num_actions=3))
    config = R2D2Config(epsilon_per_environment=True, hidden_sizes=(8,), lstm_size=8,
                        head_hidden_size=0)
    builder = R2D2Builder(config, ActingLayout(num_actors=2, num_envs_per_actor=8,
                                               env_groups=2))
    networks = builder.make_networks(spec=spec)
    policies = [builder.make_policy(networks=networks, spec=spec, actor_id=a, num_actors=2)
                for a in range(2)]
    # 2 actors x 4 environments a call: 8 epsilons from 0.4 down to 0.4^8, none twice.
    epsilons = policies[0].epsilons + policies[1].epsilons
    assert epsilons == tuple(apex_epsilon(i, 8) for i in range(8))
    assert epsilons[0] == pytest.approx(0.4) and epsilons[-1] == pytest.approx(0.4 ** 8)
    assert builder.make_policy(networks=networks, spec=spec, evaluation=True).epsilons == (0.0,)
    per_actor = R2D2Builder(R2D2Config(hidden_sizes=(8,), lstm_size=8), builder.layout)
    assert per_actor.make_policy(networks=networks, spec=spec, actor_id=1,
                                 num_actors=2).epsilons == (pytest.approx(0.4 ** 8),)


def test_rows_act_with_their_own_epsilon():
    """Row 0 at epsilon 1 acts uniformly, row 1 at epsilon 0 greedily, in one call."""
    from components.actors import RecurrentEpsilonGreedyPolicy

    spec = make_environment_spec(fakes.discrete_environment(num_actions=4))
    builder = R2D2Builder(R2D2Config(hidden_sizes=(8,), lstm_size=8, head_hidden_size=0))
    network = builder.make_networks(spec=spec)["q"]
    policy = RecurrentEpsilonGreedyPolicy(network, spec, [1.0, 0.0], seed=3)
    observations = np.zeros((2, 4), np.float32)
    q, _ = network(tf.constant(observations), network.initial_state(2))
    greedy = int(np.argmax(q.numpy()[1]))
    rows = [policy(observations, network.initial_state(2))[0].numpy() for _ in range(200)]
    assert {int(r[1]) for r in rows} == {greedy}
    assert {int(r[0]) for r in rows} == {0, 1, 2, 3}
    with pytest.raises(ValueError, match="epsilon"):
        RecurrentEpsilonGreedyPolicy(network, spec, [0.5, 1.5])


def test_torso_features_put_a_layer_between_the_torso_and_the_lstm():
    spec = make_environment_spec(fakes.discrete_environment(num_actions=3, observation_shape=(5,)))
    sizes = {}
    for features in (0, 16):
        builder = R2D2Builder(R2D2Config(hidden_sizes=(8,), lstm_size=4, head_hidden_size=0,
                                         torso_features=features))
        q = builder.make_networks(spec=spec)["q"]
        sizes[features] = sorted(tuple(v.shape) for v in q.trainable_variables)
    assert len(sizes[16]) == len(sizes[0]) + 2  # One more Linear layer: weights and bias.
    # The LSTM's input weights (4 gates of 4 units) read 16 features, not the torso's 8.
    assert (16, 16) in sizes[16] and (16, 16) not in sizes[0]


def _targets(rewards, discounts, mask, q_target_at_best, gamma=0.5, n=2):
    """Targets for one sequence (B = 1) whose online argmax is action 0 everywhere."""
    t = len(rewards)
    q_online = np.zeros((t, 1, 2), np.float32)
    q_online[:, :, 0] = 1.0  # a* = 0.
    q_target = np.zeros((t, 1, 2), np.float32)
    q_target[:, 0, 0] = q_target_at_best
    q_target[:, 0, 1] = 100.0  # Larger, but not the online network's choice (double Q).

    def column(x):
        return tf.constant(np.asarray(x, np.float32)[:, None])

    out = rescaled_n_step_targets(tf.constant(q_online), tf.constant(q_target), column(rewards),
                                  column(discounts), column(mask), gamma, n, eps=0.0)
    return out.numpy()[:, 0]


def h(x):
    return float(signed_hyperbolic(tf.constant(x, tf.float64), 0.0))


# With eps = 0, h^-1(1) = 3 and h^-1(2) = 8: the bootstrap values are 3 or 8.
def test_targets_inside_an_episode_cut_n_short_at_the_sequence_end():
    y = _targets([1, 2, 3, 4], [1, 1, 1, 1], [1, 1, 1, 1], [1, 2, 1, 2])
    assert y[0] == pytest.approx(h(1 + 0.5 * 2 + 0.25 * 3))  # Bootstraps from step 2.
    assert y[1] == pytest.approx(h(2 + 0.5 * 3 + 0.25 * 8))  # From step 3.
    assert y[2] == pytest.approx(h(3 + 0.5 * 8))  # Step 3 is the last: one step only.


def test_targets_at_a_termination_do_not_bootstrap():
    # Step 1's action ends the episode (discount 0); step 2 is the last observation
    # (mask 0), step 3 padding.
    y = _targets([1, 2, 0, 0], [1, 0, 0, 0], [1, 1, 0, 0], [1, 2, 1, 2])
    assert y[0] == pytest.approx(h(1 + 0.5 * 2))
    assert y[1] == pytest.approx(h(2))


def test_targets_at_a_truncation_bootstrap_from_the_last_observation():
    y = _targets([1, 2, 0, 0], [1, 1, 0, 0], [1, 1, 0, 0], [1, 2, 1, 2])
    assert y[0] == pytest.approx(h(1 + 0.5 * 2 + 0.25 * 3))  # From step 2, the last obs.
    assert y[1] == pytest.approx(h(2 + 0.5 * 3))  # Cut to one step there.


def test_priorities_mix_max_and_mean_of_the_trainable_steps():
    abs_td = tf.constant([[1.0, 4.0], [3.0, 0.0], [2.0, 9.0]])
    mask = tf.constant([[1.0, 1.0], [1.0, 1.0], [0.0, 0.0]])  # The last row does not count.
    p = sequence_priorities(abs_td, mask, eta=0.9).numpy()
    np.testing.assert_allclose(p, [0.9 * 3 + 0.1 * 2.0, 0.9 * 4 + 0.1 * 2.0], rtol=1e-6)


def _learner_and_batch(burn_in, length=8, batch=3, seed=0, batches_per_call=1):
    config = R2D2Config(sequence_length=length, period=length // 2, burn_in=burn_in,
                        hidden_sizes=(8,), lstm_size=8, head_hidden_size=8, batch_size=batch,
                        min_replay_size=batch, batches_per_call=batches_per_call)
    builder = R2D2Builder(config)
    spec = make_environment_spec(make_environment("memory:4"))
    networks = builder.make_networks(spec=spec)
    learner = builder.make_learner(networks=networks, spec=spec, iterator=iter(()), replay_address=None)
    rng = np.random.default_rng(seed)
    state = rng.normal(size=(batch, length, 8)).astype(np.float32)
    data = {
        "observation": rng.normal(size=(batch, length, 3)).astype(np.float32),
        "action": rng.integers(0, 2, (batch, length)).astype(np.int32),
        "reward": rng.normal(size=(batch, length)).astype(np.float32),
        "discount": np.ones((batch, length), np.float32),
        "extras": {"core_state": (state, -state)},
        "mask": np.ones((batch, length), np.float32),
    }
    return learner, data


def _observation_gradient(learner, data):
    observation = tf.constant(data["observation"])
    with tf.GradientTape() as tape:
        tape.watch(observation)
        loss = learner.loss(_sample(dict(data, observation=observation)))["loss"]
    return tape.gradient(loss, observation).numpy()


def test_burn_in_steps_get_no_gradient():
    burn_in = 3
    learner, data = _learner_and_batch(burn_in)
    grad = _observation_gradient(learner, data)
    assert np.all(grad[:, :burn_in] == 0.0)  # They only rebuilt the state.
    assert np.all(np.abs(grad[:, burn_in:-1]).sum(axis=-1) > 0)  # Trained steps learn.
    # Without burn-in the same first steps do get a gradient (the test can fail).
    learner0, data0 = _learner_and_batch(0)
    assert np.all(np.abs(_observation_gradient(learner0, data0)[:, :burn_in]).sum(axis=-1) > 0)
    # Burn-in rewards and actions do not enter the loss; burn-in observations
    # shape it only through the state they lead to.
    base = float(learner.loss(_sample(data))["loss"])
    changed = dict(data, reward=data["reward"].copy(), action=data["action"].copy())
    changed["reward"][:, :burn_in] += 100.0
    changed["action"][:, :burn_in] = 1 - changed["action"][:, :burn_in]
    assert float(learner.loss(_sample(changed))["loss"]) == pytest.approx(base, rel=1e-6)


def test_the_stored_state_is_where_each_sequence_starts():
    learner, data = _learner_and_batch(burn_in=2)
    base = float(learner.loss(_sample(data))["loss"])
    other = dict(data, extras={"core_state": tuple(s * 0 for s in data["extras"]["core_state"])})
    assert float(learner.loss(_sample(other))["loss"]) != pytest.approx(base, rel=1e-4)


@pytest.mark.parametrize("env_groups", [1, 2])
def test_r2d2_learns_a_memory_task_through_threads(tmp_path, env_groups):
    """memory:6: the cue at step 0, the question 6 steps later; chance scores 0, memory 1.

    With two alternating groups, each group's actor keeps its own environments'
    LSTM states: a mix-up would leave the policy at chance.
    """
    config = R2D2Config(sequence_length=8, period=4, burn_in=0, hidden_sizes=(32,),
                        lstm_size=32, head_hidden_size=32, batch_size=16, min_replay_size=32,
                        samples_per_insert=4.0, variable_update_period=20,
                        target_update_period=50, learning_rate_decay_steps=0)
    factory = functools.partial(make_environment, "memory:6")
    program_config = ProgramConfig(num_actors=2, num_envs_per_actor=4, max_actor_steps=12_000,
                                   eval_every=2000, eval_episodes=20, print_every_s=0,
                                   env_groups=env_groups)
    spec = make_environment_spec(factory())
    tf.random.set_seed(0)
    result = launch_threads(make_agent_program(R2D2Builder(config, program_config.layout),
                                               factory, spec,
                                               program_config, str(tmp_path)))
    assert result.status == "completed", result.error and result.error.formatted
    assert result.objects["counter"].get_counts()["learner_steps"] > 50
    assert evaluation_stats(str(tmp_path))["eval_return_mean_last10"] >= 0.8  # Chance: 0.


def _good_and_poisoned(data):
    """The batch as a replay sample, and a copy with one NaN reward."""
    import reverb

    info = reverb.SampleInfo(key=tf.constant([1, 2, 3], tf.uint64),
                             probability=tf.constant([0.2, 0.3, 0.5], tf.float64),
                             table_size=tf.constant([3, 3, 3], tf.int64),
                             priority=tf.ones([3], tf.float64),
                             times_sampled=tf.ones([3], tf.int32))
    poisoned_reward = data["reward"].copy()
    poisoned_reward[1, 5] = np.nan  # One poisoned step of one sequence.
    return (reverb.ReplaySample(info=info, data=data),
            reverb.ReplaySample(info=info, data=dict(data, reward=poisoned_reward)))


def test_a_compiled_loop_stops_at_a_nan_batch_and_keeps_the_batches_before():
    from components.learners import NonFiniteLossError

    single, data = _learner_and_batch(burn_in=2)
    looped, _ = _learner_and_batch(burn_in=2, batches_per_call=3)
    looped.restore(single.save())
    good, poisoned = _good_and_poisoned(data)
    looped._iterator = fakes.sample_iterator([good, good, poisoned, good])
    single._step_fn(good)
    single._step_fn(good)
    with pytest.raises(NonFiniteLossError, match="learner step 3: loss term 'loss' is nan"):
        looped.step()
    assert looped._step_loop._compiled and looped.num_steps == 2
    for name, value in single.save().items():
        np.testing.assert_allclose(looped.save()[name], value, rtol=1e-5, atol=1e-6)
    looped.step()  # The batch after the NaN one.
    assert looped.num_steps == 3


def test_a_nan_batch_stops_the_learner_naming_the_term_and_changes_nothing():
    from components.learners import NonFiniteLossError

    learner, data = _learner_and_batch(burn_in=2)
    learner._iterator = iter(_good_and_poisoned(data))
    learner.step()
    before = learner.save()
    with pytest.raises(NonFiniteLossError, match="learner step 2: loss term 'loss' is nan"):
        learner.step()
    after = learner.save()
    for name in before:  # Weights, target, optimizer and step count: all as they were.
        np.testing.assert_array_equal(before[name], after[name])
    assert learner.num_steps == 1
