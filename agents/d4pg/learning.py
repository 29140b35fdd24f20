"""The D4PG learner: a distributional critic and a deterministic policy from n-step transitions.

For a batch of n-step transitions (o_tm1, a_tm1, r_t, d_t, o_t), where r_t is
the discounted n-step return and d_t the total bootstrap discount written by
the adder, and a critic with atoms z:

    p_t      = softmax(critic_target(o_t, policy_target(o_t)))
    target   = Proj_z(r_t + d_t z, p_t)                 (categorical projection)
    critic   = mean_i w_i * CE(target_i, softmax(critic(o_tm1, a_tm1)))
    policy   = -mean_i E_z[critic(o_tm1, policy(o_tm1))] (deterministic policy gradient)

The policy's gradient goes through the critic's mean but only moves the
policy's weights. Both targets trail by Polyak averaging (tau) or by a copy
every `target_update_period` steps. With prioritized replay, each item's
critic loss becomes its priority. `batches_per_call = N` runs N such steps,
each on a batch of its own, in one compiled loop (`StepLoop`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import reverb
import sonnet as snt
import tensorflow as tf

from agentkit import core
from agentkit.counting import Counter
from agentkit.loggers import Logger
from components.learning import LoopedStep, StepLogger, VariablesSaveable, all_finite
from components.losses import categorical_projection
from components.optimizers import FusedAdam


class D4PGLearner(LoopedStep, VariablesSaveable, core.Learner):
    """Trains a deterministic policy and a distributional critic from replay samples."""

    _finite_terms = ("critic_loss", "policy_loss")

    def __init__(
        self,
        policy: snt.Module,
        critic: snt.Module,
        target_policy: snt.Module,
        target_critic: snt.Module,
        iterator: Iterator[reverb.ReplaySample],
        policy_learning_rate: float,
        critic_learning_rate: float,
        target_update_period: int = 100,
        target_update_tau: float = 0.0,
        importance_sampling_exponent: float = 0.0,
        max_gradient_norm: float = 40.0,
        batches_per_call: int = 1,
        replay_client: reverb.TFClient | None = None,
        table: str | None = None,
        counter: Counter | None = None,
        logger: Logger | None = None,
        log_every_s: float = 1.0,
    ):
        self._policy = policy
        self._critic = critic
        self._target_policy = target_policy
        self._target_critic = target_critic
        self._iterator = iterator
        self._policy_optimizer = FusedAdam(policy_learning_rate)
        self._critic_optimizer = FusedAdam(critic_learning_rate)
        self._target_update_period = int(target_update_period)
        self._tau = float(target_update_tau)
        self._beta = float(importance_sampling_exponent)
        self._max_gradient_norm = float(max_gradient_norm)
        self._setup_step_loop(batches_per_call, replay_client, table)
        self._step_logger = StepLogger(counter, logger, log_every_s)
        self._num_steps = tf.Variable(0, dtype=tf.int64, trainable=False)
        # Create Adam's slots now, so checkpoints can be restored before a step.
        self._policy_optimizer._initialize(self._policy.trainable_variables)
        self._critic_optimizer._initialize(self._critic.trainable_variables)
        self._step_fn = tf.function(self._step)

    def losses(self, transitions, probabilities: tf.Tensor) -> dict[str, tf.Tensor]:
        """The critic's loss per item and the policy's loss, for a tape to differentiate."""
        o_tm1, a_tm1, r_t, d_t, o_t = transitions
        atoms = self._critic.atoms
        target_logits = self._target_critic(o_t, self._target_policy(o_t))
        target_atoms = r_t[:, None] + d_t[:, None] * atoms[None, :]
        target = tf.stop_gradient(categorical_projection(
            target_atoms, tf.nn.softmax(target_logits), atoms))
        logits = self._critic(o_tm1, a_tm1)
        critic_per_item = tf.nn.softmax_cross_entropy_with_logits(labels=target, logits=logits)
        weights = tf.pow(1.0 / tf.cast(probabilities, tf.float32), self._beta)
        weights = weights / tf.reduce_max(weights)
        q = self._critic.mean(self._critic(o_tm1, self._policy(o_tm1)))
        return {
            "critic_per_item": critic_per_item,
            "critic_loss": tf.reduce_mean(weights * critic_per_item),
            "policy_loss": -tf.reduce_mean(q),
            "q_mean": tf.reduce_mean(self._critic.mean(logits)),
        }

    def _clipped_gradients(self, tape, loss, variables):
        gradients = tape.gradient(loss, variables)
        return tf.clip_by_global_norm(gradients, self._max_gradient_norm)

    def _step(self, sample: reverb.ReplaySample) -> dict[str, tf.Tensor]:
        with tf.GradientTape(persistent=True) as tape:
            parts = self.losses(sample.data, sample.info.probability)
        critic_variables = self._critic.trainable_variables
        policy_variables = self._policy.trainable_variables
        critic_gradients, critic_norm = self._clipped_gradients(
            tape, parts["critic_loss"], critic_variables)
        policy_gradients, policy_norm = self._clipped_gradients(
            tape, parts["policy_loss"], policy_variables)
        del tape
        finite = all_finite([parts["critic_loss"], parts["policy_loss"], critic_norm,
                             policy_norm])
        if finite:  # A NaN batch changes nothing: not the weights, not the priorities.
            self._critic_optimizer.apply(critic_gradients, critic_variables)
            self._policy_optimizer.apply(policy_gradients, policy_variables)
            self._write_priorities(sample.info.key, parts["critic_per_item"])
            self._num_steps.assign_add(1)
            self._update_targets()
        return {"critic_loss": parts["critic_loss"], "policy_loss": parts["policy_loss"],
                "q_mean": parts["q_mean"], "critic_grad_norm": critic_norm,
                "policy_grad_norm": policy_norm, "finite": finite}

    def _update_targets(self) -> None:
        pairs = list(zip(self._target_policy.variables, self._policy.variables))
        pairs += list(zip(self._target_critic.variables, self._critic.variables))
        if self._tau > 0:
            for target, source in pairs:
                target.assign((1.0 - self._tau) * target + self._tau * source)
        elif self._num_steps % self._target_update_period == 0:
            for target, source in pairs:
                target.assign(source)

    @property
    def num_steps(self) -> int:
        return int(self._num_steps.numpy())

    def get_variables(self, names: Sequence[str]) -> list[list[np.ndarray]]:
        collections = {"policy": self._policy.variables, "critic": self._critic.variables}
        return [[v.numpy() for v in collections[name]] for name in names]

    def _variable_groups(self) -> dict:
        return {
            "num_steps": self._num_steps,
            "policy": self._policy.variables,
            "critic": self._critic.variables,
            "target_policy": self._target_policy.variables,
            "target_critic": self._target_critic.variables,
            "policy_optimizer": self._policy_optimizer.variables,
            "critic_optimizer": self._critic_optimizer.variables,
        }
