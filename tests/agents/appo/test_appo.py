"""APPO: the clipped surrogate on V-trace advantages, and learning through the threads launcher."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from agentkit.config import ConfigError
from agentkit.specs import make_environment_spec
from agents.appo import APPOBuilder, APPOConfig, APPOLearner
from components.losses import clipped_surrogate_loss, vtrace
from launch_programs.summary import evaluation_stats
from tests import fakes
from tests.agents.threads import learn_through_threads


@pytest.mark.parametrize("value", [0.0, 1.0, -0.1])
def test_clip_epsilon_must_be_in_the_open_unit_interval(value):
    with pytest.raises(ConfigError, match="--clip_epsilon: must be"):
        APPOConfig(clip_epsilon=value)


def _batch(network, seed, b=3, n=6, behaviour_shift=1.5):
    rng = np.random.default_rng(seed)
    observation = rng.uniform(-1, 1, (b, n, 2)).astype(np.float32)
    logits, _ = network(observation.reshape(-1, 2))
    behaviour = logits.numpy().reshape(b, n, 2) + rng.normal(0, behaviour_shift, (b, n, 2))
    return {
        "observation": observation,
        "action": rng.integers(0, 2, (b, n)).astype(np.int32),
        "reward": rng.uniform(0, 1, (b, n)).astype(np.float32),
        "discount": np.ones((b, n), np.float32),
        "extras": {"logits": behaviour.astype(np.float32),
                   "policy_version": np.zeros((b, n), np.int64)},
        "mask": np.ones((b, n), np.float32),
    }


def test_the_policy_term_is_the_clipped_surrogate_of_normalised_vtrace_advantages():
    config = APPOConfig(unroll_length=5, hidden_sizes=(8,), shared_torso=True, clip_epsilon=0.2)
    builder = APPOBuilder(config)
    spec = make_environment_spec(fakes.match_the_sign())
    networks = builder.make_networks(spec=spec)
    learner = builder.make_learner(networks=networks, spec=spec, iterator=iter(()),
                                   replay_address=None)
    assert isinstance(learner, APPOLearner)
    batch = _batch(networks["policy"], seed=0)
    out = learner.loss(tf.nest.map_structure(tf.constant, fakes.as_rollouts(batch)))
    # The same quantities by hand, time-major.
    data = {k: np.swapaxes(v, 0, 1) for k, v in batch.items() if k != "extras"}
    b_logits = np.swapaxes(batch["extras"]["logits"], 0, 1)
    logits, values = networks["policy"](data["observation"].reshape(-1, 2))
    logits = logits.numpy().reshape(6, 3, 2)
    values = values.numpy().reshape(6, 3)
    actions = data["action"][:-1]

    def logp(lg):
        lg = lg - lg.max(-1, keepdims=True)
        lp = lg - np.log(np.exp(lg).sum(-1, keepdims=True))
        return np.take_along_axis(lp, actions[..., None], -1)[..., 0]

    log_rho = logp(logits[:-1]) - logp(b_logits[:-1])
    def f32(x):
        return tf.constant(x, tf.float32)

    returns = vtrace(log_rhos=f32(log_rho), discounts=f32(0.99 * data["discount"][:-1]),
                     rewards=f32(data["reward"][:-1]), values=f32(values[:-1]),
                     bootstrap_value=f32(values[-1]), clip_rho_threshold=1.0,
                     clip_pg_rho_threshold=1.0)
    adv = returns.pg_advantages.numpy().reshape(-1)
    adv = (adv - adv.mean()) / (adv.std() + 1e-8)
    ratios = np.exp(log_rho).reshape(-1)
    assert (ratios > 1.2).any() and (ratios < 0.8).any()  # Both sides of the clip are used.
    expected = -np.mean(np.minimum(ratios * adv, np.clip(ratios, 0.8, 1.2) * adv))
    np.testing.assert_allclose(float(out["pg_loss"]), expected, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(
        float(clipped_surrogate_loss(tf.constant(ratios, tf.float32), tf.constant(adv, tf.float32),
                                     0.2)), expected, rtol=1e-4, atol=1e-6)


def test_num_epochs_makes_that_many_sgd_steps_on_each_batch_as_single_steps_would():
    from agentkit.counting import Counter

    spec = make_environment_spec(fakes.match_the_sign())
    base = dict(unroll_length=5, hidden_sizes=(8,), batch_size=3, learning_rate=1e-2)
    single = APPOBuilder(APPOConfig(**base))
    epochs = APPOBuilder(APPOConfig(**base, num_epochs=3))
    networks = single.make_networks(spec=spec)
    once = single.make_learner(networks=networks, spec=spec, iterator=iter(()),
                               replay_address=None)
    batch = tf.nest.map_structure(tf.constant,
                                  fakes.as_rollouts(_batch(networks["policy"], seed=1)))
    counter = Counter(prefix="learner")
    thrice = epochs.make_learner(networks=epochs.make_networks(spec=spec), spec=spec,
                                 iterator=iter([batch, batch]), replay_address=None,
                                 counter=counter)
    thrice.restore(once.save())
    thrice.step()
    for _ in range(3):
        once._step_fn(batch)
    assert thrice.num_steps == once.num_steps == 3
    assert counter.get_counts()["learner_steps"] == 3
    for name, value in once.save().items():  # Three epochs: three single steps, in order.
        np.testing.assert_allclose(thrice.save()[name], value, rtol=1e-5, atol=1e-6)
    once._step_fn(batch)  # A fourth step moves the weights: the equality above says something.
    weight = next(name for name in once.save() if name.endswith("/w:0"))
    assert not np.allclose(thrice.save()[weight], once.save()[weight], atol=1e-6)


def test_normalised_observations_move_once_a_batch_whatever_its_epochs():
    from components.networks.normalizer import normalizers_of

    spec = make_environment_spec(fakes.match_the_sign())
    builder = APPOBuilder(APPOConfig(unroll_length=5, hidden_sizes=(8,), batch_size=3,
                                     num_epochs=3, normalize_observations=True))
    networks = builder.make_networks(spec=spec)
    (normalizer,) = normalizers_of(networks["policy"])
    batch = _batch(networks["policy"], seed=2)
    learner = builder.make_learner(networks=networks, spec=spec,
                                   iterator=iter([tf.nest.map_structure(
                                       tf.constant, fakes.as_rollouts(batch))]),
                                   replay_address=None)
    learner.step()
    seen = batch["observation"].reshape(-1, 2)
    assert float(normalizer.count.numpy()) == pytest.approx(len(seen) + 1e-4)  # Not 3 x.
    np.testing.assert_allclose(normalizer.mean.numpy(), seen.mean(0), rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(normalizer.var.numpy(), seen.var(0), rtol=1e-3, atol=1e-4)
    served = learner.get_variables(["policy"])[0]  # Actors normalise as the learner does.
    assert any(np.array_equal(v, normalizer.mean.numpy()) for v in served)


def test_appo_learns_match_the_sign_through_threads(tmp_path):
    config = APPOConfig(unroll_length=5, batch_size=4, hidden_sizes=(32,), discount=0.9,
                        learning_rate=3e-3, max_queue_size=16, variable_update_period=5)
    result = learn_through_threads(APPOBuilder, config, fakes.match_the_sign, tmp_path)
    info = result.objects["replay"].info()[APPOBuilder.table_name]
    written = sum(result.objects[f"actor_{i}"].items_written() for i in range(2))
    assert info["num_inserts"] == written > 0
    assert evaluation_stats(str(tmp_path))["eval_return_mean_last10"] >= 9.0  # Random: 5.
    from agentkit.loggers import read_csv

    lags = [float(r["policy_lag_max"]) for r in read_csv(str(tmp_path / "learner.csv"))
            if r.get("policy_lag_max")]
    assert lags and max(lags) >= 1  # Asynchronous: actors act on stale weights, and it shows.
