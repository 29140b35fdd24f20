"""The SAC learner: twin soft Q critics, a tanh-Gaussian policy and a tuned temperature.

For a batch of n-step transitions (o, a, r, d, o') (r the discounted n-step return, d the
bootstrap discount the adder wrote), alpha = exp(log_alpha), and fresh draws
a' ~ pi(.|o'), a~ ~ pi(.|o) (reparameterised):

    y         = r + d (min_i Q'_i(o', a') - alpha log pi(a'|o'))      (target critics)
    critic    = mean_b [ (Q_1(o, a) - y)^2 + (Q_2(o, a) - y)^2 ] / 2
    policy    = mean_b [ alpha log pi(a~|o) - min_i Q_i(o, a~) ]
    alpha     = -mean_b [ log_alpha (log pi(a~|o) + target_entropy) ]

All three from the same weights, each moving only its own variables (the loop's optimizer
groups); alpha is a constant in the critic's and the policy's terms. The target critics
trail by Polyak averaging. Stored actions are mapped back to [-1, 1] for the critics, so
their inputs do not depend on the task's bounds. With prioritized replay, each item's mean
|TD| is its priority.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import reverb
import sonnet as snt
import tensorflow as tf

from components.learners import (
    LearnerIO,
    OptimizerGroup,
    SGDLearner,
    TargetUpdate,
    actor_critic_groups,
    importance_weights,
)


class SACLearner(SGDLearner):
    """Trains the policy, both critics and the temperature from replay samples."""

    def __init__(self, policy: snt.Module, critic: snt.Module, target_critic: snt.Module,
                 io: LearnerIO, *, policy_learning_rate: float, critic_learning_rate: float,
                 temperature_learning_rate: float, initial_temperature: float,
                 target_entropy: float, target_update_tau: float, target_update_period: int = 1,
                 importance_sampling_exponent: float = 0.0, max_gradient_norm: float = 1e6,
                 seed: int = 0):
        self._policy = policy
        self._critic = critic
        self._target_critic = target_critic
        self._log_alpha = tf.Variable(math.log(initial_temperature), dtype=tf.float32,
                                      name="log_temperature")
        self._target_entropy = float(target_entropy)
        self._beta = float(importance_sampling_exponent)
        self._rng = tf.random.Generator.from_seed(seed)
        super().__init__(
            io=io,
            groups=actor_critic_groups(policy, critic, policy_learning_rate,
                                       critic_learning_rate) + [
                OptimizerGroup.adam([self._log_alpha], temperature_learning_rate,
                                    name="temperature_optimizer", loss="temperature_loss")],
            max_gradient_norm=max_gradient_norm,
            targets=TargetUpdate([(target_critic, critic)], target_update_period,
                                 target_update_tau),
        )

    def loss(self, sample: reverb.ReplaySample) -> dict[str, tf.Tensor]:
        t = sample.data
        alpha = tf.stop_gradient(tf.exp(self._log_alpha))
        next_action, next_log_prob = self._policy.sample(t.next_observation, self._rng)
        target_q = tf.minimum(*self._target_critic(t.next_observation, next_action))
        y = tf.stop_gradient(t.reward + t.discount * (target_q - alpha * next_log_prob))
        q1, q2 = self._critic(t.observation, self._policy.to_squashed(t.action))
        weights = importance_weights(sample.info.probability, self._beta)
        critic_loss = 0.5 * tf.reduce_mean(weights * ((q1 - y) ** 2 + (q2 - y) ** 2))
        action, log_prob = self._policy.sample(t.observation, self._rng)
        # The policy's gradient flows through the critics but moves only the policy.
        q_new = tf.minimum(*self._critic(t.observation, action))
        policy_loss = tf.reduce_mean(alpha * log_prob - q_new)
        temperature_loss = -tf.reduce_mean(
            self._log_alpha * tf.stop_gradient(log_prob + self._target_entropy))
        return {
            "critic_loss": critic_loss,
            "policy_loss": policy_loss,
            "temperature_loss": temperature_loss,
            "priorities": 0.5 * (tf.abs(q1 - y) + tf.abs(q2 - y)),
            "temperature": alpha,
            "entropy": -tf.reduce_mean(log_prob),
            "q_mean": tf.reduce_mean(q1),
        }

    def network_groups(self) -> dict[str, Sequence[tf.Variable]]:
        return {"policy": self._policy.variables, "critic": self._critic.variables,
                "target_critic": self._target_critic.variables,
                "log_temperature": [self._log_alpha]}

    def served_variables(self) -> dict[str, Sequence[tf.Variable]]:
        return {"policy": self._policy.variables, "critic": self._critic.variables}
