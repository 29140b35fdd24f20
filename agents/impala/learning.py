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
from agentkit.loggers import Logger, NoOpLogger
from components.losses import vtrace

_NO_RATIO = -1e4  # log rho of masked steps: rho = exp(-1e4) = 0.


def _masked_mean(x: tf.Tensor, mask: tf.Tensor) -> tf.Tensor:
    return tf.reduce_sum(x * mask) / tf.maximum(tf.reduce_sum(mask), 1.0)


class IMPALALearner(core.Learner):
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
        counter: Counter | None = None,
        logger: Logger | None = None,
        log_every_s: float = 1.0,
    ):
        self._network = network
        self._iterator = iterator
        self._discount = discount
        self._learning_rate = tf.Variable(learning_rate, dtype=tf.float32, trainable=False)
        self._lr_init = float(learning_rate)
        self._lr_final = float(learning_rate if learning_rate_final is None else learning_rate_final)
        self._lr_decay_steps = int(learning_rate_decay_steps)
        if optimizer == "rmsprop":
            self._optimizer = snt.optimizers.RMSProp(self._learning_rate, epsilon=epsilon)
        else:
            self._optimizer = snt.optimizers.Adam(self._learning_rate, epsilon=epsilon)
        self._baseline_cost = baseline_cost
        self._entropy_cost = entropy_cost
        self._max_gradient_norm = max_gradient_norm
        self._clip_rho = clip_rho_threshold
        self._clip_pg_rho = clip_pg_rho_threshold
        self._counter = counter or Counter(prefix="learner")
        self._logger = logger or NoOpLogger()
        self._log_every_s = log_every_s
        self._num_steps = tf.Variable(0, dtype=tf.int64, trainable=False)
        self._optimizer._initialize(self._network.trainable_variables)
        batched = tree.map_structure(
            lambda s: tf.TensorSpec((None,) + tuple(s.shape), s.dtype), signature)
        self._step_fn = tf.function(self._step, input_signature=[batched])
        self._steps_since_log = 0
        self._time_of_log = time.time()
        self.unrolls_learned = 0

    def _step(self, batch: dict) -> dict[str, tf.Tensor]:
        # [B, T+1, ...] -> [T+1, B, ...]
        data = tree.map_structure(
            lambda x: tf.transpose(x, [1, 0] + list(range(2, x.shape.rank))), batch)
        observations = data["observation"]
        steps, size = tf.shape(data["mask"])[0], tf.shape(data["mask"])[1]
        flat = tree.map_structure(
            lambda x: tf.reshape(x, tf.concat([[steps * size], tf.shape(x)[2:]], 0)),
            observations)
        actions = tf.cast(data["action"][:-1], tf.int32)
        mask = data["mask"][:-1]
        with tf.GradientTape() as tape:
            flat_logits, flat_values = self._network(flat)
            logits = tf.reshape(flat_logits, [steps, size, -1])
            values = tf.reshape(flat_values, [steps, size])
            target_logp = -tf.nn.sparse_softmax_cross_entropy_with_logits(
                labels=actions, logits=logits[:-1])
            behaviour_logp = -tf.nn.sparse_softmax_cross_entropy_with_logits(
                labels=actions, logits=data["extras"][:-1])
            log_rhos = tf.where(mask > 0, target_logp - behaviour_logp, _NO_RATIO)
            returns = vtrace(
                log_rhos=log_rhos,
                discounts=self._discount * data["discount"][:-1],
                rewards=data["reward"][:-1],
                values=values[:-1],
                bootstrap_value=values[-1],
                clip_rho_threshold=self._clip_rho,
                clip_pg_rho_threshold=self._clip_pg_rho,
            )
            pg_loss = -_masked_mean(target_logp * returns.pg_advantages, mask)
            baseline_loss = _masked_mean(0.5 * tf.square(returns.vs - values[:-1]), mask)
            policy = tf.nn.softmax(logits[:-1])
            entropy = _masked_mean(
                -tf.reduce_sum(policy * tf.nn.log_softmax(logits[:-1]), axis=-1), mask)
            loss = pg_loss + self._baseline_cost * baseline_loss - self._entropy_cost * entropy
        variables = self._network.trainable_variables
        gradients = tape.gradient(loss, variables)
        gradients, grad_norm = tf.clip_by_global_norm(gradients, self._max_gradient_norm)
        self._optimizer.apply(gradients, variables)
        self._num_steps.assign_add(1)
        if self._lr_decay_steps > 0:
            fraction = tf.minimum(
                tf.cast(self._num_steps, tf.float32) / float(self._lr_decay_steps), 1.0)
            self._learning_rate.assign(self._lr_init + fraction * (self._lr_final - self._lr_init))
        return {
            "loss": loss,
            "pg_loss": pg_loss,
            "baseline_loss": baseline_loss,
            "entropy": entropy,
            "grad_norm": grad_norm,
            "rho_mean": _masked_mean(tf.exp(log_rhos), mask),
        }

    def step(self) -> None:
        batch = next(self._iterator)
        metrics = self._step_fn(batch)
        self.unrolls_learned += int(np.shape(batch["mask"])[0])
        counts = self._counter.increment(steps=1)
        self._steps_since_log += 1
        now = time.time()
        if now - self._time_of_log >= self._log_every_s:
            row = dict(counts)
            row.update({k: float(v) for k, v in metrics.items()})
            row["learner_steps_per_s"] = self._steps_since_log / (now - self._time_of_log)
            row["unrolls_learned"] = self.unrolls_learned
            self._logger.write(row)
            self._steps_since_log = 0
            self._time_of_log = now

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

    def _state_variables(self) -> dict[str, tf.Variable]:
        state = {"num_steps": self._num_steps, "learning_rate": self._learning_rate}
        groups = {"policy": self._network.variables, "optimizer": self._optimizer.variables}
        for group, variables in groups.items():
            for i, variable in enumerate(variables):
                state[f"{group}/{i:03d}/{variable.name}"] = variable
        return state

    def save(self) -> core.State:
        return {name: v.numpy() for name, v in self._state_variables().items()}

    def restore(self, state: core.State) -> None:
        variables = self._state_variables()
        missing = sorted(set(variables) - set(state))
        if missing:
            raise ValueError(f"checkpoint lacks {len(missing)} variables, e.g. {missing[:3]}")
        for name, variable in variables.items():
            variable.assign(state[name])
