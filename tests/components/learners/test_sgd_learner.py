"""SGDLearner, the one learner loop, on a loss of a few lines: what every agent inherits.

The wait for data is measured for every learner (Python and compiled
loops), each optimizer's learning rate lives in checkpoints, targets trail
by copies or Polyak averaging, and separate loss terms are clipped apart.
"""

from __future__ import annotations

import time

import numpy as np
import pytest
import sonnet as snt
import tensorflow as tf

from agentkit.loggers import Logger
from components.learners import (
    FusedAdam,
    LearnerIO,
    LinearDecay,
    OptimizerGroup,
    SGDLearner,
    TargetUpdate,
    importance_weights,
)


class RecordingLogger(Logger):
    def __init__(self):
        self.rows = []

    def write(self, data):
        self.rows.append(dict(data))


class Regression(SGDLearner):
    """Fits y = w x (+ a second 'critic' term with its own optimizer when `two_terms`)."""

    def __init__(self, iterator, two_terms=False, decay_steps=0, target_period=1, tau=0.0,
                 max_gradient_norm=1e6, **io):
        self.w = snt.Linear(1, with_bias=False, w_init=snt.initializers.Constant(0.0))
        self.v = snt.Linear(1, with_bias=False, w_init=snt.initializers.Constant(0.0))
        self.w_target = snt.Linear(1, with_bias=False, w_init=snt.initializers.Constant(0.0))
        for module in (self.w, self.v, self.w_target):
            module(tf.zeros([1, 1]))
        self._two_terms = two_terms
        schedule = LinearDecay(0.1, 0.0, decay_steps)
        groups = [OptimizerGroup("optimizer", "loss", self.w.trainable_variables,
                                 FusedAdam(schedule.rate), schedule)]
        if two_terms:
            other = LinearDecay(0.01)
            groups.append(OptimizerGroup("critic_optimizer", "critic_loss",
                                         self.v.trainable_variables, FusedAdam(other.rate), other))
        super().__init__(io=LearnerIO(iterator, **io), groups=groups,
                         max_gradient_norm=max_gradient_norm,
                         targets=TargetUpdate([(self.w_target, self.w)], target_period, tau))

    def loss(self, sample):
        x, y = sample
        outputs = {"loss": tf.reduce_mean(tf.square(self.w(x) - y))}
        if self._two_terms:
            outputs["critic_loss"] = 1000.0 * tf.reduce_mean(tf.square(self.v(x) - y))
        return outputs

    def network_groups(self):
        return {"w": self.w.variables, "w_target": self.w_target.variables}

    def served_variables(self):
        return {"w": self.w.variables}


def _data(count, slow_s=0.0):
    rng = np.random.default_rng(0)
    for _ in range(count):
        if slow_s:
            time.sleep(slow_s)
        x = rng.normal(size=(8, 1)).astype(np.float32)
        yield x, 2.0 * x


def _run_for(learner, seconds):
    """The first step (tracing) and then `seconds` more of steps."""
    learner.step()
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        learner.step()


def _last_wait(logger):
    rows = [r for r in logger.rows if "data_wait_fraction" in r]
    assert rows, "no row carried data_wait_fraction"
    return rows[-1]["data_wait_fraction"]


def test_the_wait_for_data_is_logged_for_a_python_iterator():
    slow, fast = RecordingLogger(), RecordingLogger()
    _run_for(Regression(_data(10_000, slow_s=0.02), logger=slow, log_every_s=0.2), 1.6)
    _run_for(Regression(_data(100_000), logger=fast, log_every_s=0.2), 1.6)
    assert _last_wait(slow) > 0.6  # 20 ms per batch against well under 1 ms of SGD.
    assert _last_wait(fast) < 0.4
    assert _last_wait(slow) > _last_wait(fast) + 0.3


def test_the_wait_for_data_is_measured_inside_a_compiled_loop():
    def slow_batches():
        def make(_):
            def sleep():
                time.sleep(0.02)
                return np.float32(0)
            pause = tf.numpy_function(sleep, [], tf.float32)
            x = tf.random.normal([8, 1]) + pause
            return x, 2.0 * x
        return tf.data.Dataset.range(100_000).map(make)

    logger = RecordingLogger()
    learner = Regression(iter(slow_batches()), batches_per_call=4, logger=logger,
                         log_every_s=0.2)
    _run_for(learner, 1.6)
    assert learner._step_loop._compiled
    assert _last_wait(logger) > 0.6


def test_learning_rates_are_in_checkpoints_and_restored():
    learner = Regression(_data(100), decay_steps=10)
    for _ in range(4):
        learner.step()
    state = learner.save()
    assert int(state["num_steps"]) == 4
    assert float(state["optimizer_learning_rate"]) == pytest.approx(0.1 * (1 - 4 / 10))
    fresh = Regression(_data(100), decay_steps=10)
    fresh.restore(state)
    assert float(fresh._groups[0].schedule.rate.numpy()) == pytest.approx(0.06)
    assert fresh.num_steps == 4
    np.testing.assert_array_equal(fresh.get_variables(["w"])[0][0],
                                  learner.get_variables(["w"])[0][0])


def test_a_periodic_target_copies_every_n_steps():
    learner = Regression(_data(100), target_period=3)
    targets = []
    for _ in range(6):
        learner.step()
        targets.append(float(learner.w_target.w.numpy()))
    online = float(learner.w.w.numpy())
    assert targets[0] == targets[1] == 0.0
    assert targets[2] == targets[3] == targets[4] != 0.0
    assert targets[5] == pytest.approx(online)


def test_a_polyak_target_moves_tau_of_the_way_each_step():
    learner = Regression(_data(100), tau=0.25)
    learner.step()
    w1 = float(learner.w.w.numpy())
    assert float(learner.w_target.w.numpy()) == pytest.approx(0.25 * w1)
    learner.step()
    w2 = float(learner.w.w.numpy())
    assert float(learner.w_target.w.numpy()) == pytest.approx(0.75 * 0.25 * w1 + 0.25 * w2)


def test_each_loss_term_is_clipped_on_its_own_and_named_in_the_metrics():
    logger = RecordingLogger()
    learner = Regression(_data(100), two_terms=True, max_gradient_norm=1.0, logger=logger,
                         log_every_s=0.0)
    learner.step()
    row = logger.rows[-1]
    # The critic's gradient is 1000x larger: clipped jointly it would shrink the other's.
    assert row["critic_grad_norm"] > 100 * row["grad_norm"] > 0
    assert set(row) >= {"loss", "critic_loss", "grad_norm", "critic_grad_norm", "learning_rate"}
    assert "critic_optimizer" in {k.split("/")[0] for k in learner.save()}


def test_importance_weights_follow_the_formula():
    probabilities = tf.constant([0.5, 0.25, 0.125], tf.float64)
    weights = importance_weights(probabilities, 0.5).numpy()
    expected = (1 / np.array([0.5, 0.25, 0.125])) ** 0.5
    np.testing.assert_allclose(weights, expected / expected.max(), rtol=1e-6)
    np.testing.assert_array_equal(importance_weights(probabilities, 0.0).numpy(), [1, 1, 1])


def test_bad_arguments_fail_clearly():
    with pytest.raises(ValueError, match="batches_per_call must be >= 1"):
        Regression(_data(1), batches_per_call=0)
    with pytest.raises(ValueError, match="target update period must be >= 1"):
        TargetUpdate([], period=0)
    with pytest.raises(ValueError, match="at least one OptimizerGroup"):
        SGDLearner(io=LearnerIO(iter(())), groups=[], max_gradient_norm=1.0)


class RowCounter(SGDLearner):
    """Records, with a plain SGD step of rate 1 on loss = -mean(w * id_one_hot), how often
    each row id of a batch was in a minibatch: w[id] grows by 1 / minibatch size each time."""

    def __init__(self, iterator, rows, epochs, minibatches, **kwargs):
        self.w = tf.Variable(tf.zeros([rows]))
        self.prepared = tf.Variable(0)
        schedule = LinearDecay(1.0)
        plain_sgd = snt.optimizers.Momentum(schedule.rate, momentum=0.0)
        groups = [OptimizerGroup("optimizer", "loss", [self.w], plain_sgd, schedule)]
        super().__init__(io=LearnerIO(iterator), groups=groups, max_gradient_norm=1e9,
                         epochs_per_batch=epochs, minibatches_per_epoch=minibatches, **kwargs)

    def prepare(self, sample):
        self.prepared.assign_add(1)
        return {"id": tf.range(tf.shape(sample)[0]), "x": sample}, {"rows": tf.size(sample)}

    def loss(self, data):
        one_hot = tf.one_hot(data["id"], tf.size(self.w))
        return {"loss": -tf.reduce_mean(tf.reduce_sum(one_hot * self.w, axis=1)),
                "x_mean": tf.reduce_mean(data["x"])}

    def network_groups(self):
        return {"w": [self.w]}

    def served_variables(self):
        return {"w": [self.w]}


@pytest.mark.parametrize("rows, minibatches", [(12, 4), (14, 4)])
def test_minibatch_epochs_take_every_row_once_an_epoch_in_a_fresh_order(rows, minibatches):
    """PPO's epochs, in the loop: E epochs x M minibatches of N // M rows (the rest of each
    epoch's order left out), one SGD step each; `prepare` runs once a batch."""
    epochs, size = 3, rows // minibatches
    batch = tf.constant(np.arange(rows, dtype=np.float32))
    learner = RowCounter(iter([batch]), rows, epochs, minibatches)
    learner.step()
    assert learner.num_steps == epochs * minibatches and int(learner.prepared.numpy()) == 1
    taken = learner.w.numpy() * size  # Times each row was in a minibatch.
    np.testing.assert_allclose(taken.sum(), epochs * minibatches * size, rtol=1e-5)
    if rows % minibatches == 0:  # Every row once an epoch.
        np.testing.assert_allclose(taken, epochs, rtol=1e-5)
    else:  # At most once an epoch; 2 rows left out of each epoch.
        assert taken.max() <= epochs + 1e-4 and taken.min() >= -1e-4


def test_minibatch_metrics_are_means_over_the_steps_with_the_batchs_own():
    rows, minibatches, epochs = 8, 4, 2
    batch = tf.constant(np.arange(rows, dtype=np.float32))
    learner = RowCounter(iter(()), rows, epochs, minibatches)
    metrics = learner._step_fn(batch)
    # Each epoch's minibatches cover every row once: the mean of x over them is the mean of x.
    assert float(metrics["x_mean"]) == pytest.approx(np.arange(rows).mean())
    assert int(metrics["rows"]) == rows and bool(metrics["finite"])
    with pytest.raises(ValueError, match="num_minibatches must be >= 1"):
        RowCounter(iter(()), rows, 1, 0)
