"""PPO and A2C: GAE across episode ends inside a round, the losses by hand, and learning
through the threads launcher with every rollout consumed once and the policy lag bounded."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from agentkit.acting import ActingLayout
from agentkit.config import ConfigError
from agentkit.loggers import read_csv
from agentkit.specs import make_environment_spec
from agents.ppo import A2CBuilder, A2CConfig, PPOBuilder, PPOConfig
from components.networks.normalizer import RunningMeanStd
from launch_programs.agent_program import ProgramConfig, make_agent_program
from launch_programs.summary import evaluation_stats
from launch_programs.threads import launch_threads
from tests import fakes

R, T, K = 2, 5, 3  # Rollouts (actors), steps, environments per rollout.
GAMMA, LAMBDA = 0.9, 0.8


def _learner(**overrides):
    config = PPOConfig(rollout_length=T, hidden_sizes=(8,), discount=GAMMA, gae_lambda=LAMBDA,
                       **overrides)
    builder = PPOBuilder(config, ActingLayout(num_actors=R, num_envs_per_actor=K))
    spec = make_environment_spec(fakes.match_the_sign())
    networks = builder.make_networks(spec=spec)
    learner = builder.make_learner(networks=networks, spec=spec, iterator=iter(()),
                                   replay_address=None)
    return learner, networks["policy"]


def _batch(seed=0):
    """R rollouts of K environments: episode ends (terminated and truncated), reset steps and
    a failed simulator's step, each at a different place."""
    rng = np.random.default_rng(seed)
    mask = np.ones((R, T, K), np.float32)
    discount = np.ones((R, T, K), np.float32)
    mask[0, 2, 0] = 0.0  # o_2 was LAST (terminated: d_1 = 0); step 2 resets.
    discount[0, 1, 0] = 0.0
    discount[0, 2, 0] = 0.0
    mask[0, 1, 1] = 0.0  # o_1 was LAST after a truncation (d_0 = 1).
    discount[0, 1, 1] = 0.0
    mask[1, 3, 2] = 0.0  # A failure at step 3: reset without a LAST.
    discount[1, 3, 2] = 0.0
    discount[1, 4, 1] = 0.0  # Terminated at the rollout's last step: o_T bootstraps nothing.
    return {
        "observation": rng.uniform(-1, 1, (R, T + 1, K, 2)).astype(np.float32),
        "action": rng.integers(0, 2, (R, T, K)).astype(np.int32),
        "reward": (rng.uniform(0, 1, (R, T, K)) * mask).astype(np.float32),
        "discount": discount,
        "extras": {"logits": rng.normal(0, 1, (R, T, K, 2)).astype(np.float32),
                   "policy_version": np.zeros((R, T, K), np.int64)},
        "mask": mask,
    }


def _reference_advantages(batch, values):
    """GAE per environment, walking back: the chain goes on only into a step of the same
    episode (mask 1); values [R, T+1, K]."""
    adv = np.zeros((R, T, K))
    for r in range(R):
        for k in range(K):
            following = 0.0
            for t in reversed(range(T)):
                m, d = batch["mask"][r, t, k], batch["discount"][r, t, k]
                delta = batch["reward"][r, t, k] + GAMMA * d * values[r, t + 1, k] - values[r, t, k]
                goes_on = t + 1 < T and batch["mask"][r, t + 1, k] == 1
                adv[r, t, k] = delta + (GAMMA * LAMBDA * d * following if goes_on else 0.0)
                following = adv[r, t, k] if m else 0.0
    return adv


def test_advantages_match_gae_per_episode_across_resets_and_failures():
    learner, network = _learner()
    batch = _batch()
    steps = learner.advantages(tf.nest.map_structure(tf.constant, batch))
    _, values = network(batch["observation"].reshape(-1, 2))
    values = values.numpy().reshape(R, T + 1, K)
    expected = _reference_advantages(batch, values)
    # Flat order: step t of environment e (e = r K + k) is at t (R K) + e.
    got = steps["advantage"].numpy().reshape(T, R, K).transpose(1, 0, 2)
    mask = batch["mask"] > 0
    np.testing.assert_allclose(got[mask], expected[mask], rtol=1e-5, atol=1e-5)
    returns = steps["return"].numpy().reshape(T, R, K).transpose(1, 0, 2)
    np.testing.assert_allclose(returns[mask], (expected + values[:, :T])[mask], rtol=1e-5,
                               atol=1e-5)
    assert np.all(steps["policy_lag"].numpy() == 0)


def _logp(logits, actions):
    logits = logits - logits.max(-1, keepdims=True)
    logp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    return np.take_along_axis(logp, actions[..., None], -1)[..., 0]


@pytest.mark.parametrize("value_clip", [0.0, 0.05])
def test_the_loss_is_the_clipped_surrogate_with_the_value_and_entropy_terms(value_clip):
    learner, network = _learner(value_clip=value_clip, entropy_cost=0.01, clip_epsilon=0.2)
    rng = np.random.default_rng(1)
    n = 40
    observation = rng.uniform(-1, 1, (n, 2)).astype(np.float32)
    actions = rng.integers(0, 2, n).astype(np.int32)
    logits, values = (x.numpy() for x in network(observation))
    behaviour_logp = (_logp(logits, actions) + rng.normal(0, 0.5, n)).astype(np.float32)
    mask = (rng.uniform(size=n) > 0.2).astype(np.float32)
    steps = {"observation": observation, "action": actions, "behaviour_logp": behaviour_logp,
             "advantage": rng.normal(0, 2, n).astype(np.float32),
             "return": rng.normal(0, 1, n).astype(np.float32),
             "value": (values + rng.normal(0, 0.2, n)).astype(np.float32), "mask": mask}
    out = learner.loss(tf.nest.map_structure(tf.constant, steps))
    on = mask > 0
    ratios = np.exp(_logp(logits, actions) - behaviour_logp)[on]
    assert (ratios > 1.2).any() and (ratios < 0.8).any()  # Both sides of the clip are used.
    adv = steps["advantage"][on]
    adv = (adv - adv.mean()) / (adv.std() + 1e-8)
    pg = -np.mean(np.minimum(ratios * adv, np.clip(ratios, 0.8, 1.2) * adv))
    v, old, g = values[on], steps["value"][on], steps["return"][on]
    error = (g - v) ** 2
    if value_clip:
        error = np.maximum(error, (g - (old + np.clip(v - old, -value_clip, value_clip))) ** 2)
        assert (np.abs(v - old) > value_clip).any()
    p = np.exp(logits - logits.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    entropy = -(p * np.log(p)).sum(-1)[on].mean()
    np.testing.assert_allclose(float(out["pg_loss"]), pg, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(float(out["baseline_loss"]), 0.5 * error.mean(), rtol=1e-4)
    np.testing.assert_allclose(float(out["entropy"]), entropy, rtol=1e-4)
    np.testing.assert_allclose(float(out["loss"]), pg + 0.5 * 0.5 * error.mean() - 0.01 * entropy,
                               rtol=1e-4, atol=1e-6)
    log_ratio = np.log(ratios)  # KL(behaviour || current), the (r - 1) - log r estimate.
    np.testing.assert_allclose(float(out["approx_kl"]), np.mean(ratios - 1 - log_ratio),
                               rtol=1e-4)


def test_a_round_is_epochs_times_minibatches_sgd_steps_and_one_version():
    learner, _ = _learner(num_epochs=3, num_minibatches=2)
    batch = _batch()
    metrics = learner._step_fn(tf.nest.map_structure(tf.constant, batch))
    assert bool(metrics["finite"])
    assert learner.num_steps == 3 * 2 and learner.version == 1
    assert float(metrics["policy_lag_max"]) == 0.0
    batch["extras"]["policy_version"][:] = -2  # Acted two rounds before (a mixed round).
    metrics = learner._step_fn(tf.nest.map_structure(tf.constant, batch))
    assert float(metrics["policy_lag_mean"]) == 3.0 and learner.version == 2


def _on_policy_batch(network):
    """_batch() acted by `network` itself: the first SGD step's KL is exactly 0."""
    batch = _batch()
    logits, _ = network(batch["observation"][:, :T].reshape(-1, 2))
    batch["extras"]["logits"] = logits.numpy().reshape(R, T, K, 2)
    return tf.nest.map_structure(tf.constant, batch)


def test_the_adaptive_rate_follows_each_sgd_step_and_is_saved():
    # One SGD step: its KL, measured before its update, is 0, so the rate goes up 1.5x.
    learner, network = _learner(learning_rate=1e-3, kl_target=0.01, num_epochs=1)
    metrics = learner._step_fn(_on_policy_batch(network))
    assert float(metrics["learning_rate"]) == pytest.approx(1.5e-3)
    # A target far below what any update moves: up once (KL 0), then down at every later step.
    learner, network = _learner(learning_rate=1e-3, kl_target=1e-12, num_epochs=4)
    metrics = learner._step_fn(_on_policy_batch(network))
    assert float(metrics["approx_kl"]) > 2e-12
    assert float(metrics["learning_rate"]) == pytest.approx(1e-3 * 1.5 / 1.5 ** 3, rel=1e-5)
    # The rate is learner state: a restored learner goes on from it, not from --learning_rate.
    restored, _ = _learner(learning_rate=1e-3, kl_target=1e-12, num_epochs=4)
    assert float(restored._groups[0].schedule.rate.numpy()) == pytest.approx(1e-3)
    restored.restore(learner.save())
    assert float(restored._groups[0].schedule.rate.numpy()) == pytest.approx(1e-3 / 1.5 ** 2)


def test_normalised_observations_move_with_each_round_and_reach_the_actors():
    learner, network = _learner(normalize_observations=True, num_epochs=1)
    batch = _batch()
    normalizer = next(m for m in network.submodules if isinstance(m, RunningMeanStd))
    inner = next(m for m in network.submodules if m.name == "separate_policy_value")
    np.testing.assert_array_equal(normalizer.mean.numpy(), [0.0, 0.0])  # Before any round.
    learner._step_fn(tf.nest.map_structure(tf.constant, batch))
    seen = batch["observation"].reshape(-1, 2)  # Every observation of the round, o_T too.
    np.testing.assert_allclose(normalizer.mean.numpy(), seen.mean(0), rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(normalizer.var.numpy(), seen.var(0), rtol=1e-3, atol=1e-4)
    served = learner.get_variables(["policy"])[0]  # What actors and the evaluator load.
    assert any(np.array_equal(v, normalizer.mean.numpy()) for v in served)
    assert any(np.array_equal(v, normalizer.var.numpy()) for v in served)
    # The policy reads normalised inputs: a shift of every observation by the running mean
    # is what the network without it would see from the centred inputs.
    observation = tf.constant(seen[:7])
    scaled = (seen[:7] - normalizer.mean.numpy()) / np.sqrt(normalizer.var.numpy() + 1e-5)
    logits, _ = network(observation)
    inner_logits, _ = inner(tf.constant(np.clip(scaled, -5, 5).astype(np.float32)))
    np.testing.assert_allclose(logits.numpy(), inner_logits.numpy(), rtol=1e-5, atol=1e-6)


def test_the_adaptive_rate_excludes_the_decay_and_bounds_the_rate():
    with pytest.raises(ConfigError, match="kl_target.*one schedule at a time"):
        PPOConfig(kl_target=0.01, learning_rate_decay_steps=100)
    with pytest.raises(ConfigError, match="learning_rate.*adaptive rate's range"):
        PPOConfig(kl_target=0.01, learning_rate=0.1)
    with pytest.raises(ConfigError, match="kl_target"):
        PPOConfig(kl_target=-1.0)


def test_alternating_groups_and_too_many_minibatches_fail_naming_the_flag():
    config = PPOConfig(rollout_length=4, num_minibatches=9)
    with pytest.raises(ConfigError, match="^--env_groups: must be 1 with PPO"):
        PPOBuilder(config, ActingLayout(num_actors=1, num_envs_per_actor=2, env_groups=2))
    with pytest.raises(ConfigError, match="^--num_minibatches: must be at most the 8 steps"):
        PPOBuilder(config, ActingLayout(num_actors=1, num_envs_per_actor=2, env_groups=1))
    assert PPOBuilder(config, ActingLayout(num_actors=1, num_envs_per_actor=3)).layout.num_envs == 3


def test_the_command_line_refuses_alternating_groups_for_ppo(capsys):
    from launch_programs import run

    assert run.main(["--agent=ppo", "--env=gym:CartPole-v1", "--env_groups=2",
                     "--logdir=/nonexistent/never-made"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: --env_groups: must be 1 with PPO") and "\n" not in err


@pytest.mark.parametrize("builder_class,config", [
    (PPOBuilder, PPOConfig(rollout_length=10, hidden_sizes=(32,), discount=0.9, num_epochs=4,
                           learning_rate=3e-3)),
    (A2CBuilder, A2CConfig(rollout_length=5, hidden_sizes=(32,), discount=0.9,
                           learning_rate=3e-3)),
    (PPOBuilder, PPOConfig(rollout_length=10, hidden_sizes=(32,), discount=0.9, num_epochs=4,
                           learning_rate=3e-3, max_policy_lag=1)),
], ids=["ppo", "a2c", "ppo-overlapped"])
def test_learns_match_the_sign_through_threads_each_rollout_once_and_the_lag_bounded(
        tmp_path, builder_class, config):
    """Synchronous: no round's data is older than the weights before it. Overlapped: the
    actors start a round ahead (round 1 acts with round 0's weights, so a lag of 1 is
    seen), and no further; two actors sharing the learner's batches can reach 2."""
    program_config = ProgramConfig(num_actors=2, num_envs_per_actor=2, max_actor_steps=4000,
                                   eval_every=1000, eval_episodes=10, print_every_s=0)
    spec = make_environment_spec(fakes.match_the_sign())
    tf.random.set_seed(0)
    builder = builder_class(config, program_config.layout)
    result = launch_threads(make_agent_program(builder, fakes.match_the_sign, spec,
                                               program_config, str(tmp_path)))
    assert result.status == "completed", result.error and result.error.formatted
    info = result.objects["replay"].info()[builder.table_name]
    written = sum(result.objects[f"actor_{i}"].items_written() for i in range(2))
    stats = result.objects["learner"].learner_stats()
    # Every rollout written reached the queue and was learned from once; the last round
    # may miss the rollout of an actor that the budget stopped first.
    assert info["num_inserts"] == written
    assert stats["rollouts_learned"] <= written <= stats["rollouts_learned"] + 1
    unlearned = written - stats["rollouts_learned"]  # In the queue, or taken for a round.
    assert info["current_size"] + stats["rollouts_waiting"] == unlearned
    steps = config.rollout_length * 2 * 2
    assert stats["rounds_learned"] >= 4000 // steps - 2
    rows = [r for r in read_csv(str(tmp_path / "learner.csv")) if r.get("policy_lag_max")]
    lag = max(float(r["policy_lag_max"]) for r in rows) if rows else None
    assert lag is not None and config.max_policy_lag <= lag <= 2 * config.max_policy_lag
    assert evaluation_stats(str(tmp_path))["eval_return_mean_last10"] >= 9.0  # Random: 5.
