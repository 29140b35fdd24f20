"""DQN: config validation, the learner's math, priority write-back, the policy."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import reverb
import tensorflow as tf

from agentkit.config import ConfigError
from agentkit.counting import Counter
from agentkit.environment_loop import EnvironmentLoop
from agentkit.specs import make_environment_spec
from agents.dqn import DQNBuilder, DQNConfig
from agents.dqn.learning import huber
from components.adders import NStepTransitionAdder, PerEnvironmentAdders
from components.environments import BatchedEnvironment
from tests import fakes


@pytest.mark.parametrize("field,value", [
    ("batch_size", 0), ("discount", 1.5), ("n_step", 0), ("torso", "resnet"),
    ("epsilon_final", -0.1), ("max_replay_size", 10), ("learning_rate", 0.0),
    ("num_sgd_steps_per_step", 0), ("batches_per_call", 0),
])
def test_bad_config_values_name_their_field(field, value):
    with pytest.raises(ConfigError, match=f"--{field}: must be"):
        DQNConfig(**{field: value})


def test_huber():
    x = tf.constant([-3.0, -0.5, 0.0, 0.5, 3.0])
    np.testing.assert_allclose(huber(x, 1.0).numpy(), [2.5, 0.125, 0.0, 0.125, 2.5])


def _setup(reverb_server_factory, **overrides):
    config = DQNConfig(min_replay_size=32, batch_size=16, samples_per_insert=0,
                       hidden_sizes=(16,), head_hidden_size=16, n_step=2, **overrides)
    builder = DQNBuilder(config)
    env = fakes.discrete_environment(num_actions=3, episode_length=5, rewards=[1.0] * 5)
    spec = make_environment_spec(env)
    server, client = reverb_server_factory(builder.make_replay_tables(spec=spec))
    address = f"localhost:{server.port}"
    networks = builder.make_networks(spec=spec)
    adder = builder.make_adder(replay_client=client, spec=spec, num_envs=2)
    actor = builder.make_actor(policy=builder.make_policy(networks=networks, spec=spec),
                               networks=networks, adder=adder, variable_source=None)
    batched = BatchedEnvironment([env, fakes.discrete_environment(3, episode_length=5, seed=1)])
    EnvironmentLoop(batched, actor).run(num_steps=200)
    actor.close()
    learner = builder.make_learner(networks=builder.make_networks(spec=spec), spec=spec,
                                   iterator=builder.make_dataset_iterator(replay_address=address),
                                   replay_address=address)
    return builder, learner, client, spec, networks


def _priorities(client, table):
    # Read every item's priority through a queue-free, uniform view: sample info.
    info = client.server_info()[table]
    assert info.current_size > 0
    dataset = reverb.TrajectoryDataset.from_table_signature(
        client.server_address, table, max_in_flight_samples_per_worker=1)
    return {int(s.info.key): float(s.info.priority) for s in dataset.take(400)}


def test_prioritized_learner_step_writes_priorities_back(reverb_server_factory):
    builder, learner, client, *_ = _setup(reverb_server_factory, prioritized=True,
                                         actor_priorities=False)
    before = _priorities(client, builder.table_name)
    assert set(before.values()) == {1.0}  # The adder's initial priority.
    for _ in range(5):
        learner.step()
    after = _priorities(client, builder.table_name)
    changed = [k for k in after if k in before and after[k] != before[k]]
    assert len(changed) >= 16  # At least one batch of items got |td| priorities.
    assert learner.num_steps == 5


def test_actors_write_td_error_priorities(reverb_server_factory):
    builder, _, client, _, networks = _setup(reverb_server_factory, prioritized=True)
    dataset = reverb.TrajectoryDataset.from_table_signature(
        client.server_address, builder.table_name, max_in_flight_samples_per_worker=1)
    checked = 0
    for sample in dataset.take(50):
        t = sample.data
        o, a, r, d, o_next = (np.asarray(x)[None] for x in (
            t.observation, t.action, t.reward, t.discount, t.next_observation))
        q = networks["q"](o).numpy()[0, int(a[0])]
        q_next = networks["q"](o_next).numpy()[0].max()
        expected = abs(float(r[0]) + float(d[0]) * q_next - q)
        assert float(sample.info.priority) == pytest.approx(expected, rel=1e-4, abs=1e-5)
        checked += 1
    assert checked == 50


def test_apex_epsilons_follow_the_paper():
    from components.actors import apex_epsilon

    assert apex_epsilon(0, 8) == pytest.approx(0.4)
    assert apex_epsilon(7, 8) == pytest.approx(0.4**8)
    assert apex_epsilon(3, 8) == pytest.approx(0.4 ** (1 + 7 * 3 / 7))
    assert apex_epsilon(0, 1) == pytest.approx(0.4)
    config = DQNConfig(hidden_sizes=(8,), head_hidden_size=0, apex_epsilons=True)
    builder = DQNBuilder(config)
    spec = make_environment_spec(fakes.discrete_environment(num_actions=4))
    networks = builder.make_networks(spec=spec)
    epsilons = [builder.make_policy(networks=networks, spec=spec, actor_id=i, num_actors=4).epsilon()
                for i in range(4)]
    assert epsilons == pytest.approx([0.4 ** (1 + 7 * i / 3) for i in range(4)])
    assert builder.make_policy(networks=networks, spec=spec, evaluation=True).epsilon() == 0.0


def test_learner_reduces_the_loss_and_updates_the_target(reverb_server_factory):
    tf.random.set_seed(0)  # Fixed initial weights: the loss reduction must not depend on luck.
    # The target stays fixed for the first 59 steps (copied at step 60), so on
    # one batch this is plain regression: the loss must fall, whatever the batch.
    builder, learner, _, spec, _ = _setup(reverb_server_factory, prioritized=False,
                                          target_update_period=60, learning_rate=1e-2)
    sample = next(learner._iterator)
    first = float(learner._step_fn(sample)["loss"])
    for _ in range(58):
        metrics = learner._step_fn(sample)
    assert float(metrics["loss"]) < 0.5 * first
    online, target = learner.get_variables(["q", "q_target"])
    assert any(not np.array_equal(a, b) for a, b in zip(online, target))  # Step 59: stale.
    learner._step_fn(sample)  # Step 60: the target is copied after the update.
    online, target = learner.get_variables(["q", "q_target"])
    for a, b in zip(online, target):
        np.testing.assert_array_equal(a, b)
    assert learner.num_steps == 60


def test_learner_checkpoint_round_trip(reverb_server_factory):
    builder, learner, _, spec, _ = _setup(reverb_server_factory)
    for _ in range(3):
        learner.step()
    state = learner.save()
    assert int(state["num_steps"]) == 3
    assert any(k.startswith("optimizer/") for k in state)
    other = builder.make_learner(networks=builder.make_networks(spec=spec), spec=spec,
                                 iterator=iter(()), replay_address=None)
    other.restore(state)
    assert other.num_steps == 3
    for a, b in zip(learner.get_variables(["q"])[0], other.get_variables(["q"])[0]):
        np.testing.assert_array_equal(a, b)


def test_policy_explores_then_acts_greedily_without_retracing():
    config = DQNConfig(hidden_sizes=(8,), head_hidden_size=0, epsilon_decay_steps=100,
                       epsilon_final=0.0)
    builder = DQNBuilder(config)
    spec = make_environment_spec(fakes.discrete_environment(num_actions=4))
    networks = builder.make_networks(spec=spec)
    policy = builder.make_policy(networks=networks, spec=spec, seed=3)
    observations = np.random.default_rng(0).uniform(-1, 1, (50, 4)).astype(np.float32)
    early = np.asarray(policy(observations))
    greedy = np.argmax(networks["q"](observations).numpy(), axis=-1)
    assert (early != greedy).sum() > 10  # epsilon ~ 1: mostly random.
    policy(observations)
    policy(observations[:7])  # Another batch size: same trace.
    assert policy.epsilon() == 0.0
    np.testing.assert_array_equal(np.asarray(policy(observations)), greedy)
    assert policy.num_traces == 1


def test_atari_torso_is_chosen_for_frames_and_refused_for_vectors():
    builder = DQNBuilder(DQNConfig(torso="atari"))
    networks = builder.make_networks(spec=make_environment_spec(fakes.fake_atari()))
    assert networks["q"](tf.zeros((2, 84, 84, 4), tf.uint8)).shape == (2, 6)
    with pytest.raises(ConfigError, match="--torso"):
        builder.make_networks(spec=make_environment_spec(fakes.discrete_environment()))


def test_a_nan_batch_stops_the_learner_naming_the_term_and_changes_nothing(reverb_server_factory):
    from components.learners import NonFiniteLossError

    builder, learner, client, *_ = _setup(reverb_server_factory, prioritized=True)
    learner.step()
    sample = next(learner._iterator)
    reward = np.asarray(sample.data.reward).copy()
    reward[3] = np.nan  # One poisoned transition.
    poisoned = sample._replace(data=sample.data._replace(reward=tf.constant(reward)))
    before = learner.save()
    priorities = _priorities(client, builder.table_name)
    learner._iterator = iter([poisoned])
    with pytest.raises(NonFiniteLossError, match="learner step 2: loss term 'loss' is nan"):
        learner.step()
    after = learner.save()
    assert set(before) == set(after)
    for name in before:  # Weights, target, optimizer and step count: all as they were.
        np.testing.assert_array_equal(before[name], after[name])
    later = _priorities(client, builder.table_name)  # A random subset of the items.
    common = set(priorities) & set(later)
    assert len(common) > 10
    assert all(later[k] == priorities[k] for k in common)  # No priority was written...
    assert all(np.isfinite(list(later.values())))  # ...and no NaN reached the table.


def test_k_sgd_steps_per_call_equal_k_single_steps_on_the_slices(reverb_server_factory):
    """num_sgd_steps_per_step=3 on a batch of 3 x 16: the same weights, target copies,
    step count and priorities as three one-step calls on its three slices."""
    tf.random.set_seed(1)
    builder, single, client, spec, _ = _setup(reverb_server_factory, target_update_period=2,
                                              learning_rate=1e-2)
    address = client.server_address
    triple_builder = DQNBuilder(dataclasses.replace(builder.config, num_sgd_steps_per_step=3))
    counter = Counter(prefix="learner")
    triple = triple_builder.make_learner(
        networks=triple_builder.make_networks(spec=spec), spec=spec,
        iterator=triple_builder.make_dataset_iterator(replay_address=address),
        replay_address=address, counter=counter)
    triple.restore(single.save())  # Same weights, target and optimizer state.
    sample = next(triple._iterator)
    assert sample.data.reward.shape == (48,)
    for i in range(3):  # The single-step learner on each slice in turn.
        part = tf.nest.map_structure(lambda x, i=i: x[16 * i:16 * (i + 1)], sample)
        single._step_fn(part)
    single_priorities = _priorities(client, builder.table_name)
    triple._iterator = iter([sample])
    triple.step()
    assert triple.num_steps == 3 and counter.get_counts()["learner_steps"] == 3
    for name in ("q", "q_target"):  # Step 2 copied the target; step 3 moved the online net.
        for a, b in zip(single.get_variables([name])[0], triple.get_variables([name])[0]):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    triple_priorities = _priorities(client, builder.table_name)
    keys = {int(k) for k in sample.info.key.numpy()}
    common = keys & set(triple_priorities) & set(single_priorities)
    assert len(common) >= 10
    for k in common:  # Each item's priority is its |td| before its own slice's step.
        assert triple_priorities[k] == pytest.approx(single_priorities[k], rel=1e-4, abs=1e-6)


def test_three_batches_per_call_equal_three_single_step_calls(reverb_server_factory):
    """batches_per_call=3: one compiled loop over three batches gives the same weights,
    target copies, step count and priorities as three calls on them in turn."""
    tf.random.set_seed(2)
    builder, single, client, spec, _ = _setup(reverb_server_factory, target_update_period=2,
                                              learning_rate=1e-2)
    address = client.server_address
    start = single.save()
    samples = [next(single._iterator) for _ in range(3)]
    for sample in samples:
        single._step_fn(sample)
    single_priorities = _priorities(client, builder.table_name)
    looped_builder = DQNBuilder(dataclasses.replace(builder.config, batches_per_call=3))
    counter = Counter(prefix="learner")
    looped = looped_builder.make_learner(networks=looped_builder.make_networks(spec=spec), spec=spec,
                                         iterator=fakes.sample_iterator(samples),
                                         replay_address=address, counter=counter)
    looped.restore(start)
    looped.step()
    assert looped._step_loop._compiled  # One compiled call, not a Python loop.
    assert looped.num_steps == 3 and counter.get_counts()["learner_steps"] == 3
    for name in ("q", "q_target"):  # Step 2 copied the target; step 3 moved the online net.
        for a, b in zip(single.get_variables([name])[0], looped.get_variables([name])[0]):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    looped_priorities = _priorities(client, builder.table_name)
    keys = {int(k) for sample in samples for k in sample.info.key.numpy()}
    common = keys & set(looped_priorities) & set(single_priorities)
    assert len(common) >= 10
    for k in common:  # The last batch holding an item wrote its priority, in both.
        assert looped_priorities[k] == pytest.approx(single_priorities[k], rel=1e-4, abs=1e-6)
    with pytest.raises(StopIteration):  # The three batches were all used.
        looped.step()


def test_a_nan_slice_is_skipped_while_the_other_slices_apply(reverb_server_factory):
    from components.learners import NonFiniteLossError

    builder, _, client, spec, _ = _setup(reverb_server_factory, prioritized=True,
                                         num_sgd_steps_per_step=3)
    address = client.server_address
    learner = builder.make_learner(networks=builder.make_networks(spec=spec), spec=spec,
                                   iterator=builder.make_dataset_iterator(replay_address=address),
                                   replay_address=address)
    sample = next(learner._iterator)
    reward = np.asarray(sample.data.reward).copy()
    reward[16 + 3] = np.nan  # One poisoned transition in the second slice.
    poisoned = sample._replace(data=sample.data._replace(reward=tf.constant(reward)))
    learner._iterator = iter([poisoned])
    with pytest.raises(NonFiniteLossError, match="loss term 'loss' is nan"):
        learner.step()
    assert learner.num_steps == 2  # Slices one and three were applied.
    later = _priorities(client, builder.table_name)
    assert all(np.isfinite(list(later.values())))  # No NaN reached the table.


@pytest.mark.parametrize("batched_adder", [False, True])
def test_the_batched_actor_acts_from_the_priority_call_with_one_call_per_step(
        batched_adder, reverb_server_factory):
    """Ape-X priorities and the next actions share one compiled call: the separate
    policy call runs only when no item was pending; actions stay the policy's.
    The same with one adder per environment and with one batched adder."""
    config = DQNConfig(hidden_sizes=(16,), head_hidden_size=16, n_step=2, epsilon_init=0.0,
                       epsilon_final=0.0, batch_size=1, min_replay_size=1, samples_per_insert=0)
    builder = DQNBuilder(config)
    envs = [fakes.discrete_environment(3, episode_length=5, seed=s) for s in (0, 1)]
    spec = make_environment_spec(envs[0])
    _, client = reverb_server_factory(builder.make_replay_tables(spec=spec))
    networks = builder.make_networks(spec=spec)
    policy = builder.make_policy(networks=networks, spec=spec)
    if batched_adder:
        adder = builder.make_adder(replay_client=client, spec=spec, num_envs=len(envs))
    else:  # One deferring n-step adder per environment: PerEnvironmentAdders pools them.
        adder = PerEnvironmentAdders([
            NStepTransitionAdder(client, builder.table_name, n_step=2, discount=config.discount,
                                 defer_items=True) for _ in envs])
    actor = builder.make_actor(policy=policy, networks=networks, adder=adder, variable_source=None)
    calls = []
    compiled = policy._policy
    policy._policy = lambda o: (calls.append(1), compiled(o))[1]
    env = BatchedEnvironment(envs)
    timestep = env.reset()
    actor.observe_first(timestep)
    for _ in range(30):
        action = actor.select_action(timestep.observation)
        greedy = np.argmax(networks["q"](timestep.observation).numpy(), axis=-1)
        np.testing.assert_array_equal(action, greedy)
        timestep = env.step(action)
        actor.observe(action, timestep)
    actor.close()
    # Each episode is a first observation and 5 steps; the policy runs alone on
    # the first observation and after the first step (n = 2: nothing pending
    # yet); the other 4 of every 6 calls are fused: 2 x 5 separate calls in 30.
    assert len(calls) == 10
    assert int(policy._steps.numpy()) == 60  # The schedule counts each row once.
    # 5 episodes of 5 steps in each environment: one item per step, none lost.
    assert client.server_info()[builder.table_name].current_size == 50
