"""The PPO learner: GAE advantages for a round of rollouts, then epochs of minibatch SGD.

A learner step is one round. Its batch holds R rollouts (one per actor) of K
environments' T steps each (`components.adders.rollout`), made time-major
[T, E] with E = R K. With V the network's values before the round's first
update, m_t the mask and d_t the discount of step t:

    n_t      = m_{t+1} for t < T - 1, and 1 for t = T - 1 (o_T is the bootstrap)
    reward_t = m_t (r_t + gamma d_t (1 - n_t) V(o_{t+1}))   an episode's last value, folded in
    disc_t   = gamma d_t n_t                                 ... and the recursion cut there
    A, G     = GAE(reward, disc, V(o_0..o_{T-1}), V(o_T), lambda)

so a terminated episode (d = 0) bootstraps nothing, a truncated one (d = 1)
bootstraps from its last observation, and nothing flows across an episode's
end or a reset step (m = 0). Then the one learner loop's epochs
(`components.learners.SGDLearner`, `minibatches_per_epoch`): `num_epochs`
times, over the T E steps in a fresh random order cut into `num_minibatches`
minibatches, one SGD step each on (means over the steps with m_t = 1; A normalised in the minibatch;
rho_t = pi(a_t|o_t) / mu(a_t|o_t), mu the logits that acted):

    pg_loss    = -mean min(rho_t A_t, clip(rho_t, 1 - eps, 1 + eps) A_t)   (eps = 0: -mean rho A)
    value_loss = mean 0.5 (G_t - V(o_t))^2        (value_clip c > 0: PPO2's pessimistic
                                                   max with V_old + clip(V - V_old, -c, c))
    loss       = pg_loss + baseline_cost value_loss - entropy_cost mean H(pi(.|o_t))

`learner_steps` counts SGD steps (num_epochs x num_minibatches per round);
`policy_version`, which actors wait on, counts rounds. The policy lag (rounds
between the weights that acted and the learner's) is logged: synchronous
acting keeps it at 0, and a non-zero value says the rounds were mixed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import sonnet as snt
import tensorflow as tf
import tree

from components.compiled import batched_signature
from components.learners import FusedAdam, KLAdaptive, LearnerIO, LinearDecay, OptimizerGroup, SGDLearner
from components.losses import (
    clipped_surrogate_loss,
    generalized_advantage_estimation,
    masked_mean,
)
from components.networks.normalizer import observe_inputs


def _time_major(x: tf.Tensor) -> tf.Tensor:
    """[R, L, K, ...] (rollouts, time, environments) -> [L, R K, ...]."""
    y = tf.transpose(x, [1, 0] + list(range(2, x.shape.rank)))
    shape = tf.shape(y)
    return tf.reshape(y, tf.concat([shape[:1], [shape[1] * shape[2]], shape[3:]], axis=0))


def _merge_leading(x: tf.Tensor) -> tf.Tensor:
    """[L, E, ...] -> [L E, ...]."""
    shape = tf.shape(x)
    return tf.reshape(x, tf.concat([[shape[0] * shape[1]], shape[2:]], axis=0))


class PPOLearner(SGDLearner):
    """Trains a policy-value network on rounds of rollouts, several SGD steps per round."""

    _finite_terms = ("pg_loss", "baseline_loss", "entropy", "grad_norm")

    def __init__(
        self,
        network: snt.Module,
        io: LearnerIO,
        signature: dict,
        rollouts_per_round: int,
        discount: float,
        gae_lambda: float,
        learning_rate: float,
        learning_rate_final: float | None = None,
        learning_rate_decay_steps: int = 0,
        kl_target: float = 0.0,
        optimizer: str = "adam",
        epsilon: float = 1e-5,
        clip_epsilon: float = 0.2,
        value_clip: float = 0.0,
        baseline_cost: float = 0.5,
        entropy_cost: float = 0.0,
        normalize_advantages: bool = True,
        num_epochs: int = 1,
        num_minibatches: int = 1,
        max_gradient_norm: float = 0.5,
        seed: int = 0,
    ):
        self._network = network
        self._rollouts_per_round = int(rollouts_per_round)
        self._discount = float(discount)
        self._lambda = float(gae_lambda)
        self._clip_epsilon = float(clip_epsilon)
        self._value_clip = float(value_clip)
        self._baseline_cost = float(baseline_cost)
        self._entropy_cost = float(entropy_cost)
        self._normalize = bool(normalize_advantages)
        # Rounds learned: the version actors wait on (saved with the checkpoint).
        self._version = tf.Variable(0, dtype=tf.int64, trainable=False, name="policy_version")
        # kl_target > 0: the rate adapts after every SGD step to the KL that step measured.
        schedule = KLAdaptive(learning_rate, kl_target) if kl_target > 0 else LinearDecay(
            learning_rate, learning_rate_final, learning_rate_decay_steps)
        if optimizer == "rmsprop":  # A2C's: stable-baselines3's alpha 0.99.
            opt = snt.optimizers.RMSProp(schedule.rate, decay=0.99, epsilon=epsilon)
        else:
            opt = FusedAdam(schedule.rate, epsilon=epsilon)
        groups = [OptimizerGroup("optimizer", "loss", network.trainable_variables, opt, schedule)]
        batched = batched_signature(signature)
        # The loop runs the epochs of minibatches; this learner gives the round's steps
        # (`prepare`), their loss, and counts the rounds (`_after_batch`).
        super().__init__(io=io, groups=groups, max_gradient_norm=max_gradient_norm,
                         epochs_per_batch=num_epochs,
                         minibatches_per_epoch=num_minibatches, shuffle_seed=seed,
                         sample_signature=batched)
        self._published_version: int | None = None  # The version as of the last round.

    # -- one round ---------------------------------------------------------------------

    def _values(self, observations: Any) -> tuple[tf.Tensor, tf.Tensor]:
        """(logits [L, E, A], values [L, E]) of time-major observations, in one call."""
        shape = tf.shape(tree.flatten(observations)[0])
        steps, envs = shape[0], shape[1]
        logits, values = self._network(tree.map_structure(_merge_leading, observations))
        return tf.reshape(logits, [steps, envs, -1]), tf.reshape(values, [steps, envs])

    def advantages(self, batch: dict) -> dict[str, tf.Tensor]:
        """The round's steps, flat [T E, ...]: observation, action, behaviour_logp,
        advantage, return (G), value (V before the round), mask; and the policy lag [T E]."""
        data = tree.map_structure(_time_major, batch)
        logits, values = self._values(data["observation"])
        actions = tf.cast(data["action"], tf.int32)
        behaviour_logp = -tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=actions, logits=data["extras"]["logits"])
        mask, discount = data["mask"], data["discount"]
        next_mask = tf.concat([mask[1:], tf.ones_like(mask[:1])], axis=0)
        gamma = self._discount
        rewards = mask * (data["reward"] + gamma * discount * (1.0 - next_mask) * values[1:])
        advantages, returns = generalized_advantage_estimation(
            rewards, gamma * discount * next_mask, values[:-1], values[-1], self._lambda)
        lag = tf.cast(self._version - data["extras"]["policy_version"], tf.float32)
        steps = {
            "observation": tree.map_structure(lambda o: o[:-1], data["observation"]),
            "action": actions, "behaviour_logp": behaviour_logp, "advantage": advantages,
            "return": returns, "value": tf.stop_gradient(values[:-1]), "mask": mask,
            "policy_lag": lag,
        }
        return tree.map_structure(_merge_leading, steps)

    def prepare(self, batch: dict) -> tuple[dict, dict[str, tf.Tensor]]:
        """Once a round, compiled: the observation statistics moved by the round's
        observations (when the network normalises them), then the round's steps with their
        advantages, which the loop's epochs cut into minibatches; and the policy lag."""
        observe_inputs(self._network, batch["observation"])
        steps = self.advantages(batch)
        lag = steps.pop("policy_lag")
        return steps, {"policy_lag_mean": tf.reduce_mean(lag),
                       "policy_lag_max": tf.reduce_max(lag)}

    def _after_batch(self, finite: tf.Tensor) -> None:
        """Last: actors see the new version only with the new weights."""
        with tf.control_dependencies([finite]):
            self._version.assign_add(tf.cast(finite, tf.int64))

    # -- one SGD step --------------------------------------------------------------------

    def loss(self, steps: dict) -> dict[str, tf.Tensor]:
        logits, values = self._network(steps["observation"])
        actions, mask = steps["action"], steps["mask"]
        logp = -tf.nn.sparse_softmax_cross_entropy_with_logits(labels=actions, logits=logits)
        log_ratio = logp - steps["behaviour_logp"]
        ratios = tf.exp(log_ratio)
        advantages = steps["advantage"]
        if self._normalize:
            mean = masked_mean(advantages, mask)
            std = tf.sqrt(masked_mean(tf.square(advantages - mean), mask))
            advantages = (advantages - mean) / (std + 1e-8)
        if self._clip_epsilon > 0:
            pg_loss = clipped_surrogate_loss(ratios, advantages, self._clip_epsilon, mask)
        else:  # No clipping (A2C): the importance-weighted policy gradient.
            pg_loss = -masked_mean(ratios * tf.stop_gradient(advantages), mask)
        returns = steps["return"]
        value_error = tf.square(returns - values)
        if self._value_clip > 0:
            old = steps["value"]
            clipped = old + tf.clip_by_value(values - old, -self._value_clip, self._value_clip)
            value_error = tf.maximum(value_error, tf.square(returns - clipped))
        baseline_loss = masked_mean(0.5 * value_error, mask)
        entropy = masked_mean(
            -tf.reduce_sum(tf.nn.softmax(logits) * tf.nn.log_softmax(logits), axis=-1), mask)
        loss = pg_loss + self._baseline_cost * baseline_loss - self._entropy_cost * entropy
        clip_fraction = tf.cast(tf.abs(ratios - 1.0) > self._clip_epsilon, tf.float32)
        return {
            "loss": loss, "pg_loss": pg_loss, "baseline_loss": baseline_loss, "entropy": entropy,
            # KL(behaviour || current) by the (r - 1) - log r estimator: unbiased and never
            # negative (the adaptive rate compares it with a target).
            "approx_kl": masked_mean(ratios - 1.0 - log_ratio, mask),
            "clip_fraction": masked_mean(clip_fraction, mask),
            "value_mean": masked_mean(values, mask),
        }

    # -- what it serves and saves ------------------------------------------------------------

    @property
    def version(self) -> int:
        """Rounds learned."""
        return int(self._version.numpy())

    def step(self) -> None:
        super().step()
        self._published_version = self.version

    def restore(self, state) -> None:
        super().restore(state)
        self._published_version = None

    def get_variables(self, names: Sequence[str]) -> list[list[np.ndarray]]:
        """As every learner's; the version alone (what waiting actors poll, every
        millisecond) from a Python int, without a TensorFlow op competing with the round."""
        if list(names) == ["policy_version"]:
            version = self._published_version
            return [[np.array(self.version if version is None else version, np.int64)]]
        return super().get_variables(names)

    def stats(self) -> dict:
        """Rounds and rollouts learned, and rollouts taken from the queue for the next round."""
        return {"rounds_learned": self.batches_learned,
                "rollouts_learned": self.batches_learned * self._rollouts_per_round,
                "rollouts_waiting": len(getattr(self._iterator, "pending", ()))}

    def network_groups(self) -> dict[str, Sequence[tf.Variable]]:
        return {"policy": self._network.variables}

    def served_variables(self) -> dict[str, Sequence[tf.Variable]]:
        return dict(self.network_groups(), policy_version=[self._version])

    def _variable_groups(self) -> Mapping[str, Any]:
        return dict(super()._variable_groups(), policy_version=self._version)
