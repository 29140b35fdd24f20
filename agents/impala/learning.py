"""The IMPALA learner: a V-trace actor-critic on batches of unrolls.

For a batch of unrolls, time-major, with pi the learner's policy and mu the
actors' (recorded as logits):

    log_rho_t = log pi(a_t|o_t) - log mu(a_t|o_t)       (masked steps: rho = 0)
    vs, adv   = vtrace(log_rho, gamma * d, r, V(o_0..T-1), V(o_T))
    loss      = -mean(log pi(a_t|o_t) adv_t)
                + baseline_cost * mean(0.5 (vs_t - V(o_t))^2)
                - entropy_cost * mean(H(pi(.|o_t)))

means over the steps where an action was taken (mask 1). A zero ratio on
masked steps (the episode's last observation and padding) gives them no
correction and no gradient, so an unroll that ends an episode bootstraps
exactly as its discounts say.

Batches come in one of two layouts. Rollouts (`time_major`, the
feed-forward default: `components.adders.BatchedRolloutAdder`'s items, whose
columns the dataset joins) hold observations [T+1, B] and everything else
[T, B], across episode ends: a reset step has mask 0 and discount 0, so
V-trace cuts there as at any masked step. Unrolls (the recurrent policy's,
`UnrollAdder`'s) are batch-major [B, T+1] and stay within one episode; they
are transposed and their last step's action, reward and extras dropped.
The loop around this loss (clipping, the
non-finite guard, the optimizers, logging with the wait for data) is the
shared `components.learners.SGDLearner`.
"""

from __future__ import annotations

from collections.abc import Sequence

import sonnet as snt
import tensorflow as tf
import tree

from components.compiled import batched_signature
from components.learners import FusedAdam, LearnerIO, LinearDecay, OptimizerGroup, SGDLearner
from components.losses import masked_mean, vtrace
from components.networks.normalizer import observe_inputs

_NO_RATIO = -1e4  # log rho of masked steps: rho = exp(-1e4) = 0.



class IMPALALearner(SGDLearner):
    """Trains a policy-value network from batches of unrolls."""

    _finite_terms = ("pg_loss", "baseline_loss", "entropy", "grad_norm")

    def __init__(
        self,
        network: snt.Module,
        io: LearnerIO,
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
        batch_size: int = 1,
        epochs_per_batch: int = 1,
        time_major: bool = False,
    ):
        self._network = network
        self._discount = discount
        self._baseline_cost = baseline_cost
        self._entropy_cost = entropy_cost
        self._clip_rho = clip_rho_threshold
        self._clip_pg_rho = clip_pg_rho_threshold
        self._lambda = vtrace_lambda
        self._batch_size = int(batch_size)
        optimizer_class = snt.optimizers.RMSProp if optimizer == "rmsprop" else FusedAdam
        schedule = LinearDecay(learning_rate, learning_rate_final, learning_rate_decay_steps)
        # RMSProp's squared-gradient average decays at 0.99, as the paper's (Sonnet's: 0.9).
        extra = {"decay": 0.99} if optimizer == "rmsprop" else {}
        self._optimizer = optimizer_class(schedule.rate, epsilon=epsilon, **extra)
        variables = list(network.trainable_variables)
        groups = [OptimizerGroup("optimizer", "loss", variables, self._optimizer, schedule)]
        # A value network of its own may learn faster than the policy: its
        # targets (returns of ~1 / (1 - gamma)) are far from its initial outputs.
        # Both groups follow the one loss, clipped together.
        value_variables = getattr(network, "value_variables", None)
        self._value_optimizer = None
        if value_learning_rate and value_variables is not None:
            value_schedule = LinearDecay(
                value_learning_rate,
                None if learning_rate_final is None
                else value_learning_rate * learning_rate_final / learning_rate,
                learning_rate_decay_steps)
            self._value_optimizer = optimizer_class(value_schedule.rate, epsilon=epsilon, **extra)
            value_ids = {id(v) for v in value_variables}
            groups = [
                OptimizerGroup("optimizer", "loss", [v for v in variables if id(v) not in value_ids],
                               self._optimizer, schedule),
                OptimizerGroup("value_optimizer", "loss",
                               [v for v in variables if id(v) in value_ids],
                               self._value_optimizer, value_schedule),
            ]
        self._time_major = bool(time_major)
        if self._time_major:  # Items [T(+1), K, ...]: a batch has batch_size columns.
            batched = tree.map_structure(
                lambda s: tf.TensorSpec((s.shape[0], None) + tuple(s.shape[2:]), s.dtype),
                signature)
        else:  # Items [T+1, ...]: a batch stacks batch_size of them.
            batched = batched_signature(signature)
        super().__init__(io=io, groups=groups, max_gradient_norm=max_gradient_norm,
                         epochs_per_batch=epochs_per_batch, sample_signature=batched)

    def prepare(self, sample: dict) -> tuple[dict, dict[str, tf.Tensor]]:
        """The batch as it is, once its observations moved the network's input statistics
        (once a batch, whatever its epochs; only when it normalises them)."""
        observe_inputs(self._network, sample["observation"])
        return sample, {}

    def _as_time_major(self, batch: dict) -> dict:
        """The rollout layout: observations [T+1, B], the rest [T, B]."""
        if self._time_major:
            return batch
        # [B, T+1, ...] -> [T+1, B, ...]; no action follows the last observation.
        data = tree.map_structure(
            lambda x: tf.transpose(x, [1, 0] + list(range(2, x.shape.rank))), batch)
        return {key: value if key == "observation" else tree.map_structure(lambda x: x[:-1], value)
                for key, value in data.items()}

    def loss(self, batch: dict) -> dict[str, tf.Tensor]:
        data = self._as_time_major(batch)
        observations = data["observation"]
        actions = tf.cast(data["action"], tf.int32)
        mask = data["mask"]
        if "core_state" in data["extras"]:
            # Replay the unroll from the core state the actor had at its start.
            start = tree.map_structure(lambda x: x[0], data["extras"]["core_state"])
            logits, values = self._network.unroll(observations, start)
        else:  # One forward pass over all T+1 steps of all unrolls.
            shape = tf.shape(tree.flatten(observations)[0])
            steps, size = shape[0], shape[1]
            flat = tree.map_structure(
                lambda x: tf.reshape(x, tf.concat([[steps * size], tf.shape(x)[2:]], 0)),
                observations)
            flat_logits, flat_values = self._network(flat)
            logits = tf.reshape(flat_logits, [steps, size, -1])
            values = tf.reshape(flat_values, [steps, size])
        target_logp = -tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=actions, logits=logits[:-1])
        behaviour_logp = -tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=actions, logits=data["extras"]["logits"])
        log_rhos = tf.where(mask > 0, target_logp - behaviour_logp, _NO_RATIO)
        returns = vtrace(
            log_rhos=log_rhos,
            discounts=self._discount * data["discount"],
            rewards=data["reward"],
            values=values[:-1],
            bootstrap_value=values[-1],
            clip_rho_threshold=self._clip_rho,
            clip_pg_rho_threshold=self._clip_pg_rho,
            lambda_=self._lambda,
        )
        pg_loss = self._policy_loss(target_logp, behaviour_logp, returns.pg_advantages, mask)
        baseline_loss = masked_mean(0.5 * tf.square(returns.vs - values[:-1]), mask)
        policy = tf.nn.softmax(logits[:-1])
        entropy = masked_mean(
            -tf.reduce_sum(policy * tf.nn.log_softmax(logits[:-1]), axis=-1), mask)
        loss = pg_loss + self._baseline_cost * baseline_loss - self._entropy_cost * entropy
        # Policy lag: learner steps between the weights that acted and these.
        lag = tf.cast(self._num_steps - data["extras"]["policy_version"][0], tf.float32)
        return {
            "loss": loss,
            "policy_lag_mean": tf.reduce_mean(lag),
            "policy_lag_max": tf.reduce_max(lag),
            "pg_loss": pg_loss,
            "baseline_loss": baseline_loss,
            "entropy": entropy,
            "rho_mean": masked_mean(tf.exp(log_rhos), mask),
        }

    def _policy_loss(self, target_logp: tf.Tensor, behaviour_logp: tf.Tensor,
                     advantages: tf.Tensor, mask: tf.Tensor) -> tf.Tensor:
        """IMPALA's policy gradient: -mean(log pi(a_t|o_t) A_t) over the unmasked steps
        (APPO replaces it with the clipped surrogate)."""
        del behaviour_logp  # The correction is inside the V-trace advantages.
        return -masked_mean(target_logp * advantages, mask)

    def stats(self) -> dict:
        """Unrolls learned from, and taken from the queue but waiting for a full batch."""
        return {"unrolls_learned": self.batches_learned * self._batch_size,
                "unrolls_waiting": getattr(self._iterator, "waiting", 0)}

    def _extra_log_values(self, elapsed_s: float) -> dict[str, float]:
        unrolls = self.batches_learned * self._batch_size
        values = {"unrolls_learned": unrolls}
        if elapsed_s >= 1.0:
            values["unrolls_per_s"] = unrolls / elapsed_s
        return values

    def network_groups(self) -> dict[str, Sequence[tf.Variable]]:
        return {"policy": self._network.variables}

    def served_variables(self) -> dict[str, Sequence[tf.Variable]]:
        return dict(self.network_groups(), policy_version=[self._num_steps])
