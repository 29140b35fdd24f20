"""Rainbow: config checks, the loss against numpy, noisy acting vs deterministic evaluation,
priorities written back, each ablation runs, and it learns a fake task through threads."""

from __future__ import annotations

import numpy as np
import pytest
import reverb

from agentkit.config import ConfigError
from agentkit.environment_loop import EnvironmentLoop
from agentkit.specs import make_environment_spec
from agents.dqn import DQNLearner
from agents.rainbow import RainbowBuilder, RainbowConfig, RainbowLearner
from components.environments import BatchedEnvironment
from components.networks import set_noise
from launch_programs.agent_program import ProgramConfig, make_agent_program
from launch_programs.summary import evaluation_stats
from launch_programs.threads import launch_threads
from tests import fakes

SMALL = dict(min_replay_size=32, batch_size=16, samples_per_insert=0, hidden_sizes=(16,),
             head_hidden_size=16, n_step=2, num_atoms=11, v_min=-2.0, v_max=8.0)


@pytest.mark.parametrize("field,value", [
    ("num_atoms", 0), ("v_max", -20.0), ("sigma0", 0.0), ("actor_priorities", True),
])
def test_bad_config_values_name_their_field(field, value):
    with pytest.raises(ConfigError, match=f"--{field}: must be"):
        RainbowConfig(**{field: value})


def _setup(reverb_server_factory, **overrides):
    builder = RainbowBuilder(RainbowConfig(**{**SMALL, **overrides}))
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
    return builder, learner, client, address, spec


def _numpy_projection(atoms_t, probs_t, support):
    """C51's own floor/ceil projection (independent of the triangular-kernel code)."""
    projected = np.zeros(len(support))
    dz = support[1] - support[0]
    for z, p in zip(atoms_t, probs_t):
        b = (np.clip(z, support[0], support[-1]) - support[0]) / dz
        lower, upper = int(np.floor(b)), int(np.ceil(b))
        if lower == upper:
            projected[lower] += p
        else:
            projected[lower] += p * (upper - b)
            projected[upper] += p * (b - lower)
    return projected


def _softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def test_the_loss_and_priorities_match_numpy(reverb_server_factory):
    builder, learner, client, address, spec = _setup(reverb_server_factory)
    assert isinstance(learner, RainbowLearner)
    net, target = learner.network, learner.target_network
    for network in (net, target):  # Deterministic forward passes, to compare.
        assert set_noise(network, False) == 2  # The dueling head's two streams.
    target.variables[0].assign(target.variables[0] * 1.5)  # Target differs from online.
    sample = next(iter(builder.make_dataset_iterator(replay_address=address)))
    out = learner.loss(sample)
    t = sample.data
    logits_tm1 = net.logits(t.observation).numpy()
    logits_t = target.logits(t.next_observation).numpy()
    support = np.linspace(-2.0, 8.0, 11)
    q_t_online = (_softmax(net.logits(t.next_observation).numpy()) * support).sum(-1)
    expected = []
    for b in range(len(logits_tm1)):
        a_star = int(np.argmax(q_t_online[b]))  # Double Q: the online network selects.
        target_probs = _softmax(logits_t[b, a_star])
        atoms = t.reward.numpy()[b] + t.discount.numpy()[b] * support
        projected = _numpy_projection(atoms, target_probs, support)
        log_p = np.log(_softmax(logits_tm1[b, int(t.action.numpy()[b])]))
        expected.append(-(projected * log_p).sum())
    expected = np.array(expected)
    np.testing.assert_allclose(out["priorities"].numpy(), expected, rtol=1e-4, atol=1e-5)
    w = (1.0 / sample.info.probability.numpy()) ** 0.4
    w /= w.max()
    np.testing.assert_allclose(float(out["loss"]), float((w * expected).mean()), rtol=1e-4)


def _priorities(client, table):
    dataset = reverb.TrajectoryDataset.from_table_signature(
        client.server_address, table, max_in_flight_samples_per_worker=1)
    return {int(s.info.key): float(s.info.priority) for s in dataset.take(400)}


def test_learner_steps_write_cross_entropy_priorities_back(reverb_server_factory):
    builder, learner, client, address, spec = _setup(reverb_server_factory)
    before = _priorities(client, builder.table_name)
    assert set(before.values()) == {1.0}  # New items: priority 1, as actors cannot compute the loss.
    for _ in range(5):
        learner.step()
    after = _priorities(client, builder.table_name)
    changed = [after[k] for k in after if k in before and after[k] != before[k]]
    assert len(changed) >= 16  # At least one batch of items got their cross-entropy.
    # A cross-entropy against 11 atoms from near-uniform initial logits: about ln(11) = 2.4.
    assert 0.5 < float(np.median(changed)) < 5.0


def test_actors_explore_by_noise_and_the_evaluator_is_deterministic():
    builder = RainbowBuilder(RainbowConfig(**SMALL))
    spec = make_environment_spec(fakes.discrete_environment(num_actions=3))
    obs = np.random.default_rng(0).normal(size=(16,) + spec.observations.shape).astype(np.float32)
    acting = builder.make_networks(spec=spec)
    policy = builder.make_policy(networks=acting, spec=spec)
    assert policy.epsilon() == 0.0  # Noisy nets replace epsilon-greedy.
    assert not np.allclose(acting["q"](obs).numpy(), acting["q"](obs).numpy())
    actions = np.stack([policy(obs).numpy() for _ in range(20)])
    assert (actions != actions[0]).any()  # The noise changes some greedy choices.
    evaluating = builder.make_networks(spec=spec)
    policy = builder.make_policy(networks=evaluating, spec=spec, evaluation=True)
    np.testing.assert_array_equal(evaluating["q"](obs).numpy(), evaluating["q"](obs).numpy())
    actions = np.stack([policy(obs).numpy() for _ in range(20)])
    assert (actions == actions[0]).all()
    assert policy.num_traces == 1


@pytest.mark.parametrize("ablation,learner_class", [
    (dict(num_atoms=1), DQNLearner), (dict(noisy=False), RainbowLearner),
    (dict(dueling=False), RainbowLearner), (dict(double_q=False, n_step=1), RainbowLearner),
    (dict(prioritized=False), RainbowLearner),
])
def test_each_part_can_be_turned_off(reverb_server_factory, ablation, learner_class):
    builder, learner, client, address, spec = _setup(reverb_server_factory, **ablation)
    assert type(learner) is learner_class
    for _ in range(3):
        learner.step()
    assert learner.num_steps == 3


def test_rainbow_learns_match_the_sign_through_threads(tmp_path):
    config = RainbowConfig(hidden_sizes=(32,), head_hidden_size=32, batch_size=32,
                           min_replay_size=200, samples_per_insert=4.0, n_step=1, discount=0.9,
                           learning_rate=3e-3, target_update_period=50, variable_update_period=50,
                           num_atoms=21, v_min=-1.0, v_max=11.0)
    program_config = ProgramConfig(num_actors=2, num_envs_per_actor=2, max_actor_steps=5000,
                                   eval_every=1000, eval_episodes=10, print_every_s=0)
    spec = make_environment_spec(fakes.match_the_sign(0, False))
    result = launch_threads(make_agent_program(RainbowBuilder(config, program_config.layout),
                                               fakes.match_the_sign, spec,
                                               program_config, str(tmp_path)))
    assert result.status == "completed", result.error and result.error.formatted
    info = result.objects["replay"].info()[RainbowBuilder.table_name]
    assert info["num_inserts"] == result.objects["counter"].get_counts()["actor_steps"]
    assert evaluation_stats(str(tmp_path))["eval_return_mean_last10"] >= 9.0  # Random: 5.
