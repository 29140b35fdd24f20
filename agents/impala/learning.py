"""The IMPALA learner: a V-trace actor-critic on batches of unrolls.

For a batch of unrolls (time-major after a transpose), with pi the learner's
policy and mu the actors' (recorded as logits):

    log_rho_t = log pi(a_t|o_t) - log mu(a_t|o_t)       (masked steps: rho = 0)
    vs, adv   = vtrace(log_rho, gamma * d, r, V(o_0..T-1), V(o_T))
    loss      = -mean(log pi(a_t|o_t) adv_t)
                + baseline_cost * mean(0.5 (vs_t - V(o_t))^2)
                - entropy_cost * mean(H(pi(.|o_t)))

means over the steps where an action was taken (mask 1). A zero ratio on
masked steps (the episode's last observation and padding) gives them no
correction and no gradient, so an unroll that ends an episode bootstraps
exactly as its discounts say.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence

import numpy as np
import sonnet as snt
import tensorflow as tf
import tree

from agentkit import core
from agentkit.counting import Counter
from agentkit.loggers import Logger
from components.learning import (
    LinearDecay,
    StepLogger,
    VariablesSaveable,
    all_finite,
    check_finite,
)
from components.losses import vtrace
from components.optimizers import FusedAdam

_NO_RATIO = -1e4  # log rho of masked steps: rho = exp(-1e4) = 0.


def _masked_mean(x: tf.Tensor, mask: tf.Tensor) -> tf.Tensor:
    return tf.reduce_sum(x * mask) / tf.maximum(tf.reduce_sum(mask), 1.0)


class IMPALALearner(VariablesSaveable, core.Learner):
    """Trains a policy-value network from batches of unrolls."""

    def __init__(
        self,
        network: snt.Module,
        iterator: Iterator[dict],
        signature: dict,
        discount: float,
        learning_rate: float,
        learning_rate_final: float | None = None,
        learning_rate_decay_steps: int = 0,
        optimizer: str = "adam",
        epsilon: float = 1e-8,
        baseline_cost: float = 0.5,
        entropy_cost: float = 0.01,
        max_gradient_norm: float = 40.0,
        clip_rho_threshold: float | None = 1.0,
        clip_pg_rho_threshold: float | None = 1.0,
        vtrace_lambda: float = 1.0,
        value_learning_rate: float | None = None,
        counter: Counter | None = None,
        logger: Logger | None = None,
        log_every_s: float = 1.0,
    ):
        self._network = network
        self._iterator = iterator
        self._discount = discount
        self._schedule = LinearDecay(learning_rate, learning_rate_final, learning_rate_decay_steps)
        optimizer_class = snt.optimizers.RMSProp if optimizer == "rmsprop" else FusedAdam
        self._optimizer = optimizer_class(self._schedule.rate, epsilon=epsilon)
        # A value network of its own may learn faster than the policy: its
        # targets (returns of ~1 / (1 - gamma)) are far from its initial outputs.
        value_variables = getattr(network, "value_variables", None)
        self._value_optimizer = None
        if value_learning_rate and value_variables is not None:
            self._value_schedule = LinearDecay(
                value_learning_rate,
                None if learning_rate_final is None
                else value_learning_rate * learning_rate_final / learning_rate,
                learning_rate_decay_steps)
            self._value_optimizer = optimizer_class(self._value_schedule.rate, epsilon=epsilon)
        self._baseline_cost = baseline_cost
        self._entropy_cost = entropy_cost
        self._max_gradient_norm = max_gradient_norm
        self._clip_rho = clip_rho_threshold
        self._clip_pg_rho = clip_pg_rho_threshold
        self._lambda = vtrace_lambda
        self._step_logger = StepLogger(counter, logger, log_every_s)
        self._num_steps = tf.Variable(0, dtype=tf.int64, trainable=False)
        self._groups = self._partition()
        for opt, variables in self._groups:
            opt._initialize(variables)
        batched = tree.map_structure(
            lambda s: tf.TensorSpec((None,) + tuple(s.shape), s.dtype), signature)
        self._step_fn = tf.function(self._step, input_signature=[batched])
        self.unrolls_learned = 0
        self._wait_s, self._first_step = 0.0, None

    def _step(self, batch: dict) -> dict[str, tf.Tensor]:
        # [B, T+1, ...] -> [T+1, B, ...]
        data = tree.map_structure(
            lambda x: tf.transpose(x, [1, 0] + list(range(2, x.shape.rank))), batch)
        observations = data["observation"]
        actions = tf.cast(data["action"][:-1], tf.int32)
        mask = data["mask"][:-1]
        with tf.GradientTape() as tape:
            if "core_state" in data["extras"]:
                # Replay the unroll from the core state the actor had at its start.
                start = tree.map_structure(lambda x: x[0], data["extras"]["core_state"])
                logits, values = self._network.unroll(observations, start)
            else:  # One forward pass over all T+1 steps of all unrolls.
                steps, size = tf.shape(data["mask"])[0], tf.shape(data["mask"])[1]
                flat = tree.map_structure(
                    lambda x: tf.reshape(x, tf.concat([[steps * size], tf.shape(x)[2:]], 0)),
                    observations)
                flat_logits, flat_values = self._network(flat)
                logits = tf.reshape(flat_logits, [steps, size, -1])
                values = tf.reshape(flat_values, [steps, size])
            target_logp = -tf.nn.sparse_softmax_cross_entropy_with_logits(
                labels=actions, logits=logits[:-1])
            behaviour_logp = -tf.nn.sparse_softmax_cross_entropy_with_logits(
                labels=actions, logits=data["extras"]["logits"][:-1])
            log_rhos = tf.where(mask > 0, target_logp - behaviour_logp, _NO_RATIO)
            returns = vtrace(
                log_rhos=log_rhos,
                discounts=self._discount * data["discount"][:-1],
                rewards=data["reward"][:-1],
                values=values[:-1],
                bootstrap_value=values[-1],
                clip_rho_threshold=self._clip_rho,
                clip_pg_rho_threshold=self._clip_pg_rho,
                lambda_=self._lambda,
            )
            pg_loss = -_masked_mean(target_logp * returns.pg_advantages, mask)
            baseline_loss = _masked_mean(0.5 * tf.square(returns.vs - values[:-1]), mask)
            policy = tf.nn.softmax(logits[:-1])
            entropy = _masked_mean(
                -tf.reduce_sum(policy * tf.nn.log_softmax(logits[:-1]), axis=-1), mask)
            loss = pg_loss + self._baseline_cost * baseline_loss - self._entropy_cost * entropy
        variables = [v for _, group in self._groups for v in group]
        gradients = tape.gradient(loss, variables)
        gradients, grad_norm = tf.clip_by_global_norm(gradients, self._max_gradient_norm)
        finite = all_finite([pg_loss, baseline_loss, entropy, grad_norm])
        if finite:  # A NaN batch changes nothing.
            self._apply(gradients)
        return {
            "loss": loss,
            "pg_loss": pg_loss,
            "baseline_loss": baseline_loss,
            "entropy": entropy,
            "grad_norm": grad_norm,
            "rho_mean": _masked_mean(tf.exp(log_rhos), mask),
            "finite": finite,
        }

    def _apply(self, gradients) -> None:
        start = 0
        for opt, group in self._groups:
            opt.apply(gradients[start:start + len(group)], group)
            start += len(group)
        self._num_steps.assign_add(1)
        self._schedule.update(self._num_steps)
        if self._value_optimizer is not None:
            self._value_schedule.update(self._num_steps)

    def step(self) -> None:
        started = time.monotonic()
        batch = next(self._iterator)
        waited = time.monotonic() - started
        metrics = self._step_fn(batch)
        if not bool(metrics.pop("finite")):
            check_finite(metrics, ["pg_loss", "baseline_loss", "entropy", "grad_norm"],
                         self.num_steps + 1)
        self.unrolls_learned += int(np.shape(batch["mask"])[0])
        # Which side limits the run: the share of time spent waiting for
        # unrolls since the first batch (near 1: actors are too slow; near 0:
        # the learner is), and the unrolls learned per second.
        if self._first_step is None:  # Count from the first batch: not the start-up fill.
            self._first_step = time.monotonic()
        else:
            self._wait_s += waited
        elapsed = time.monotonic() - self._first_step
        extra = {"unrolls_learned": self.unrolls_learned}
        if elapsed >= 1.0:  # Rates over less than a second say nothing.
            extra["data_wait_fraction"] = self._wait_s / elapsed
            extra["unrolls_per_s"] = self.unrolls_learned / elapsed
        self._step_logger.record(metrics, extra)

    def _partition(self) -> list:
        """(optimizer, variables) pairs: one for everything, or policy and value apart."""
        if self._value_optimizer is None:
            return [(self._optimizer, list(self._network.trainable_variables))]
        value_ids = {id(v) for v in self._network.value_variables}
        policy = [v for v in self._network.trainable_variables if id(v) not in value_ids]
        value = [v for v in self._network.trainable_variables if id(v) in value_ids]
        return [(self._optimizer, policy), (self._value_optimizer, value)]

    def stats(self) -> dict:
        """Unrolls learned from, and taken from the queue but waiting for a full batch."""
        return {"unrolls_learned": self.unrolls_learned,
                "unrolls_waiting": len(getattr(self._iterator, "pending", ()))}

    @property
    def num_steps(self) -> int:
        return int(self._num_steps.numpy())

    def get_variables(self, names: Sequence[str]) -> list[list[np.ndarray]]:
        collections = {"policy": self._network.variables}
        return [[v.numpy() for v in collections[name]] for name in names]

    def _variable_groups(self) -> dict:
        return {
            "num_steps": self._num_steps,
            "learning_rate": self._schedule.rate,
            "policy": self._network.variables,
            "optimizer": [v for opt, _ in self._groups for v in opt.variables],
        }
