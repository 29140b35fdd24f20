"""IMPALA: config validation, the learner's V-trace loss, and learning through the threads launcher."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from agentkit.acting import ActingLayout
from agentkit.config import ConfigError
from agentkit.specs import make_environment_spec
from agents.impala import IMPALABuilder, IMPALAConfig
from launch_programs.agent_program import ProgramConfig, make_agent_program
from launch_programs.summary import evaluation_stats
from launch_programs.threads import launch_threads
from tests import fakes


@pytest.mark.parametrize("field,value", [
    ("unroll_length", 0), ("batch_size", 0), ("optimizer", "sgd"), ("entropy_cost", -1.0),
    ("max_queue_size", 5), ("discount", 2.0), ("torso", "resnet"),
])
def test_bad_config_values_name_their_field(field, value):
    overrides = {field: value}
    if field == "max_queue_size":
        overrides["batch_size"] = 4  # A queue must hold more than batch_size + 1 unrolls.
    with pytest.raises(ConfigError, match=f"--{field}: must be"):
        IMPALAConfig(**overrides)


def _learner_and_batch(config, seed=0):
    """A learner of batch-major unrolls [B, T+1] (the layout a recurrent policy's items have;
    a feed-forward builder's learner takes rollouts) and such a batch of 3."""
    from components.adders import unroll_signature
    from components.learners import make_learner_io

    builder = IMPALABuilder(config)
    spec = make_environment_spec(fakes.match_the_sign())
    networks = builder.make_networks(spec=spec)
    kwargs = builder._learner_kwargs(networks, spec)
    kwargs.update(time_major=False, signature=unroll_signature(
        spec, config.unroll_length, builder._extras_spec(spec)))
    learner = builder.learner_class(io=make_learner_io(iter(()), None), **kwargs)
    rng = np.random.default_rng(seed)
    n, b = config.unroll_length + 1, 3
    observation = rng.uniform(-1, 1, (b, n, 2)).astype(np.float32)
    logits, _ = networks["policy"](observation.reshape(-1, 2))
    batch = {
        "observation": observation,
        "action": rng.integers(0, 2, (b, n)).astype(np.int32),
        "reward": rng.uniform(0, 1, (b, n)).astype(np.float32),
        "discount": np.ones((b, n), np.float32),
        # On-policy: behaviour == target, acted with the learner's current weights (version 0).
        "extras": {"logits": logits.numpy().reshape(b, n, 2),
                   "policy_version": np.zeros((b, n), np.int64)},
        "mask": np.ones((b, n), np.float32),
    }
    return learner, batch


def test_on_policy_ratios_are_one_and_masked_steps_do_not_count():
    config = IMPALAConfig(unroll_length=4, hidden_sizes=(8,))
    learner, batch = _learner_and_batch(config)
    before = [v.numpy() for v in learner._network.variables]
    metrics = learner._step_fn(batch)
    assert float(metrics["rho_mean"]) == pytest.approx(1.0, abs=1e-5)
    assert np.isfinite(float(metrics["loss"]))
    after = [v.numpy() for v in learner._network.variables]
    assert any(not np.array_equal(a, b) for a, b in zip(before, after))  # It learned.
    assert learner.num_steps == 1

    # Steps with mask 0 (after an episode's end) must not change the loss:
    # garbage there is the same as zeros there.
    config = IMPALAConfig(unroll_length=4, hidden_sizes=(8,), learning_rate=1e-9,
                          value_learning_rate=0.0)  # Steps leave the weights as they are.
    learner, batch = _learner_and_batch(config, seed=1)
    batch["mask"][:, 2:] = 0.0
    batch["discount"][:, 1] = 0.0  # The episode terminated after step 1.
    garbage = {k: (v.copy() if k != "extras" else {e: x.copy() for e, x in v.items()})
               for k, v in batch.items()}
    garbage["reward"][:, 2:] = 1e3
    garbage["action"][:, 2:] = 1 - garbage["action"][:, 2:]
    garbage["extras"]["logits"][:, 2:] = 5.0
    losses = [float(learner._step_fn(b)["loss"]) for b in (batch, garbage)]
    assert losses[0] == pytest.approx(losses[1], rel=1e-5)


def test_the_policy_lag_of_each_unroll_is_logged():
    config = IMPALAConfig(unroll_length=4, hidden_sizes=(8,))
    learner, batch = _learner_and_batch(config)
    for _ in range(5):
        learner._step_fn(batch)
    # Unrolls acted with the weights of learner steps 5, 2 and 4; the learner is at step 5.
    batch["extras"]["policy_version"][:] = np.array([[5], [2], [4]])
    metrics = learner._step_fn(batch)
    assert float(metrics["policy_lag_mean"]) == pytest.approx((0 + 3 + 1) / 3)
    assert float(metrics["policy_lag_max"]) == 3.0


def test_actors_record_the_version_of_the_weights_they_fetched():
    builder = IMPALABuilder(IMPALAConfig(hidden_sizes=(8,)))
    spec = make_environment_spec(fakes.match_the_sign())
    networks = builder.make_networks(spec=spec)

    class Source:
        def get_variables(self, names):
            assert names == ["policy", "policy_version"]
            return [[v.numpy() for v in networks["policy"].variables], [np.int64(42)]]

    policy = builder.make_policy(networks=builder.make_networks(spec=spec), spec=spec)
    actor = builder.make_actor(policy=policy, networks=builder.make_networks(spec=spec),
                               adder=None, variable_source=Source())
    actor.update(wait=True)
    _, extras = policy(np.zeros((3, 2), np.float32))
    np.testing.assert_array_equal(extras["policy_version"], [42, 42, 42])


def test_impala_learns_match_the_sign_and_consumes_every_rollout_once(tmp_path):
    config = IMPALAConfig(unroll_length=5, batch_size=4, hidden_sizes=(32,), discount=0.9,
                          learning_rate=3e-3, max_queue_size=16, variable_update_period=5)
    program_config = ProgramConfig(num_actors=2, num_envs_per_actor=2, max_actor_steps=6000,
                                   eval_every=1000, eval_episodes=10, print_every_s=0)
    spec = make_environment_spec(fakes.match_the_sign())
    tf.random.set_seed(0)
    builder = IMPALABuilder(config, program_config.layout)
    program = make_agent_program(builder, fakes.match_the_sign, spec, program_config,
                                 str(tmp_path))
    assert builder.rollout_envs == 2  # Feed-forward: one rollout of 2 environments per item.
    result = launch_threads(program)
    assert result.status == "completed", result.error and result.error.formatted
    info = result.objects["replay"].info()[IMPALABuilder.table_name]
    written = sum(result.objects[f"actor_{i}"].items_written() for i in range(2))
    stats = result.objects["learner"].learner_stats()
    learned, waiting = stats["unrolls_learned"], stats["unrolls_waiting"]
    # Every rollout written reached the queue; each one handed out was learned
    # from (its 2 unrolls, or what of them waits for the next batch); what was
    # never handed out is still there.
    assert info["num_inserts"] == written > 0
    assert 2 * info["num_samples"] == learned + waiting
    assert waiting < config.batch_size
    assert info["num_samples"] + info["current_size"] == info["num_inserts"]
    # A rollout holds T = 5 steps of 2 environments: the steps counted, and the
    # reset step after each finished episode (mask 0, not counted); each actor
    # drops at most its unfinished rollout at the budget, and at most its 2
    # last episodes end with no reset step after them.
    counts = result.objects["counter"].get_counts()
    stepped = counts["actor_steps"] + counts["actor_episodes"]
    assert written * 5 * 2 <= stepped < (written + 2) * 5 * 2 + 4
    assert evaluation_stats(str(tmp_path))["eval_return_mean_last10"] >= 9.0  # Random: 5.


def test_rollout_batches_give_the_loss_of_the_same_unrolls():
    """The learner of rollout items (observations [T+1, B], the rest [T, B], the actor's
    layout across episode ends) computes what the unroll learner does on the same steps."""
    config = IMPALAConfig(unroll_length=4, hidden_sizes=(8,))
    unrolls, batch = _learner_and_batch(config, seed=2)
    batch["mask"][0, 2:] = 0.0  # An episode ends at step 2 of the first column ...
    batch["discount"][0, 1] = 0.0
    batch["reward"][0, 2] = 0.0  # ... whose reset step has no reward.
    batch["extras"]["policy_version"][:] = np.array([[0], [3], [1]])
    builder = IMPALABuilder(config, ActingLayout(num_actors=1, num_envs_per_actor=3))
    spec = make_environment_spec(fakes.match_the_sign())
    networks = builder.make_networks(spec=spec)
    for target, source in zip(networks["policy"].variables, unrolls._network.variables):
        target.assign(source)
    rollouts = builder.make_learner(networks=networks, spec=spec, iterator=iter(()),
                                    replay_address=None)
    assert rollouts._time_major and not unrolls._time_major
    for _ in range(3):  # The learners' steps: lag 3 - version.
        unrolls._num_steps.assign_add(1)
        rollouts._num_steps.assign_add(1)
    junk = {k: (v.copy() if k != "extras" else {e: x.copy() for e, x in v.items()})
            for k, v in batch.items()}
    junk["action"][:, -1] = 1 - junk["action"][:, -1]  # No action follows o_T: never read.
    junk["reward"][:, -1] = 7.0
    expected = unrolls.loss(tf.nest.map_structure(tf.constant, junk))
    got = rollouts.loss(tf.nest.map_structure(tf.constant, fakes.as_rollouts(batch)))
    assert set(got) == set(expected)
    for name in expected:
        np.testing.assert_allclose(float(got[name]), float(expected[name]), rtol=1e-5,
                                   atol=1e-6, err_msg=name)
    assert float(got["policy_lag_max"]) == 3.0 and float(got["baseline_loss"]) > 0


def test_feed_forward_actors_write_rollouts_and_recurrent_ones_unrolls(reverb_server_factory):
    from components.adders import BatchedRolloutAdder, PerEnvironmentAdders, UnrollAdder

    spec = make_environment_spec(fakes.match_the_sign())
    layout = ActingLayout(num_actors=2, num_envs_per_actor=6, env_groups=2)
    builder = IMPALABuilder(IMPALAConfig(unroll_length=4, batch_size=4, max_queue_size=16),
                            layout)
    assert builder.rollout_envs == 3  # Each of the 2 groups writes its own rollouts.
    table = builder.make_replay_tables(spec=spec)[0]
    # 16 unrolls waiting are 6 items of 3 (rounded up); a batch of 4 takes 2 items.
    assert table.info.max_size == 6
    assert builder.signature(spec)["observation"].shape == (5, 3, 2)
    assert builder.signature(spec)["action"].shape == (4, 3)
    server, client = reverb_server_factory([table])
    adder = builder.make_adder(replay_client=client, spec=spec, num_envs=3)
    assert isinstance(adder, BatchedRolloutAdder) and adder.num_envs == 3
    with pytest.raises(ValueError, match="the builder's layout has 3 a group"):
        builder.make_adder(replay_client=client, spec=spec, num_envs=6)
    recurrent = IMPALABuilder(IMPALAConfig(lstm_size=4, unroll_length=4), layout)
    assert recurrent.rollout_envs is None
    adder = recurrent.make_adder(replay_client=client, spec=spec, num_envs=3)
    assert isinstance(adder, PerEnvironmentAdders)  # One unroll adder per environment.
    assert [type(a) for a in adder.adders] == [UnrollAdder] * 3
    assert recurrent.signature(spec)["action"].shape == (5,)


def test_value_torso_gets_its_own_learning_rate():
    config = IMPALAConfig(unroll_length=4, hidden_sizes=(8,), learning_rate=1e-3,
                          value_learning_rate=1e-2)
    learner, batch = _learner_and_batch(config)
    network = learner._network
    value_ids = {id(v) for v in network.value_variables}
    before = {id(v): v.numpy() for v in network.trainable_variables}
    learner._step_fn(batch)

    def largest_change(value_side):
        return max(float(np.abs(v.numpy() - before[id(v)]).max())
                   for v in network.trainable_variables if (id(v) in value_ids) == value_side)

    # Adam's first step moves each parameter by about its learning rate.
    assert largest_change(True) == pytest.approx(1e-2, rel=0.05)
    assert largest_change(False) == pytest.approx(1e-3, rel=0.05)
    state = learner.save()
    # Both optimizers' slots and learning rates are in the checkpoint.
    assert sum(k.startswith("optimizer/") for k in state) == len(learner._optimizer.variables) > 0
    assert (sum(k.startswith("value_optimizer/") for k in state)
            == len(learner._value_optimizer.variables) > 0)
    assert float(state["optimizer_learning_rate"]) == pytest.approx(1e-3)
    assert float(state["value_optimizer_learning_rate"]) == pytest.approx(1e-2)


def test_recurrent_unroll_replays_exactly_what_the_actor_computed(reverb_server_factory):
    """The learner's LSTM unroll from the stored start state gives the actor's own logits."""
    from agentkit.environment_loop import EnvironmentLoop
    from components.datasets import make_single_sample_iterator
    from components.environments import BatchedEnvironment

    config = IMPALAConfig(unroll_length=4, hidden_sizes=(8,), lstm_size=6)
    builder = IMPALABuilder(config)
    spec = make_environment_spec(fakes.match_the_sign())
    server, client = reverb_server_factory(builder.make_replay_tables(spec=spec))
    networks = builder.make_networks(spec=spec)
    adder = builder.make_adder(replay_client=client, spec=spec, num_envs=2)
    actor = builder.make_actor(policy=builder.make_policy(networks=networks, spec=spec),
                               networks=networks, adder=adder, variable_source=None)
    env = BatchedEnvironment([fakes.match_the_sign(seed=1), fakes.match_the_sign(seed=2)])
    EnvironmentLoop(env, actor).run(num_steps=25)  # 10-step episodes: resets inside.
    actor.close()
    samples = make_single_sample_iterator(f"localhost:{server.port}", builder.table_name, 100)
    checked = 0
    for _ in range(8):
        data = next(samples).data
        start = tuple(np.asarray(s)[0][None] for s in data["extras"]["core_state"])
        observations = np.asarray(data["observation"])[:, None]  # [T+1, 1, 2]
        logits, _ = networks["policy"].unroll(observations, start)
        mask = np.asarray(data["mask"]) > 0
        np.testing.assert_allclose(logits.numpy()[:, 0][mask],
                                   np.asarray(data["extras"]["logits"])[mask], atol=1e-5)
        checked += int(mask.sum())
    assert checked >= 8 * 3


def test_recurrent_impala_learns_through_threads(tmp_path):
    config = IMPALAConfig(unroll_length=5, batch_size=4, hidden_sizes=(32,), lstm_size=32,
                          discount=0.9, learning_rate=3e-3, max_queue_size=16,
                          variable_update_period=5)
    program_config = ProgramConfig(num_actors=2, num_envs_per_actor=2, max_actor_steps=6000,
                                   eval_every=1000, eval_episodes=10, print_every_s=0)
    spec = make_environment_spec(fakes.match_the_sign())
    tf.random.set_seed(0)
    result = launch_threads(make_agent_program(IMPALABuilder(config, program_config.layout),
                                               fakes.match_the_sign, spec, program_config,
                                               str(tmp_path)))
    assert result.status == "completed", result.error and result.error.formatted
    assert evaluation_stats(str(tmp_path))["eval_return_mean_last10"] >= 9.0  # Random: 5.


def test_a_nan_batch_stops_the_learner_naming_the_term():
    from components.learners import NonFiniteLossError

    config = IMPALAConfig(unroll_length=4, hidden_sizes=(8,))
    learner, batch = _learner_and_batch(config)
    batch["reward"][1, 2] = np.inf
    before = learner.save()
    learner._iterator = iter([batch])
    with pytest.raises(NonFiniteLossError, match="learner step 1: loss term 'pg_loss' is inf"):
        learner.step()
    after = learner.save()
    for name in before:
        np.testing.assert_array_equal(before[name], after[name])
