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
critic loss becomes its priority. The loop around this loss (N batches per
compiled call, clipping per loss term, the non-finite guard, target
updates, priority writes) is the shared `components.learners.SGDLearner`.
"""

from __future__ import annotations

from collections.abc import Sequence

import reverb
import sonnet as snt
import tensorflow as tf

from components.learners import (
    LearnerIO,
    SGDLearner,
    TargetUpdate,
    actor_critic_groups,
    importance_weights,
)
from components.losses import categorical_projection


class D4PGLearner(SGDLearner):
    """Trains a deterministic policy and a distributional critic from replay samples."""

    def __init__(
        self,
        policy: snt.Module,
        critic: snt.Module,
        target_policy: snt.Module,
        target_critic: snt.Module,
        io: LearnerIO,
        policy_learning_rate: float,
        critic_learning_rate: float,
        target_update_period: int = 100,
        target_update_tau: float = 0.0,
        importance_sampling_exponent: float = 0.0,
        max_gradient_norm: float = 40.0,
    ):
        self._policy = policy
        self._critic = critic
        self._target_policy = target_policy
        self._target_critic = target_critic
        self._beta = float(importance_sampling_exponent)
        super().__init__(
            io=io,
            groups=actor_critic_groups(policy, critic, policy_learning_rate,
                                       critic_learning_rate),
            max_gradient_norm=max_gradient_norm,
            targets=TargetUpdate([(target_policy, policy), (target_critic, critic)],
                                 target_update_period, target_update_tau),
        )

    def loss(self, sample: reverb.ReplaySample) -> dict[str, tf.Tensor]:
        """The critic's and the policy's losses; each item's critic loss is its priority."""
        transitions = sample.data
        o_tm1, a_tm1, o_t = transitions.observation, transitions.action, \
            transitions.next_observation
        r_t, d_t = transitions.reward, transitions.discount
        atoms = self._critic.atoms
        target_logits = self._target_critic(o_t, self._target_policy(o_t))
        target_atoms = r_t[:, None] + d_t[:, None] * atoms[None, :]
        target = tf.stop_gradient(categorical_projection(
            target_atoms, tf.nn.softmax(target_logits), atoms))
        logits = self._critic(o_tm1, a_tm1)
        critic_per_item = tf.nn.softmax_cross_entropy_with_logits(labels=target, logits=logits)
        weights = importance_weights(sample.info.probability, self._beta)
        # The policy climbs the critic's mean; its gradient moves only the policy.
        q = self._critic.mean(self._critic(o_tm1, self._policy(o_tm1)))
        return {
            "critic_loss": tf.reduce_mean(weights * critic_per_item),
            "policy_loss": -tf.reduce_mean(q),
            "priorities": critic_per_item,
            "q_mean": tf.reduce_mean(self._critic.mean(logits)),
        }

    def network_groups(self) -> dict[str, Sequence[tf.Variable]]:
        return {"policy": self._policy.variables, "critic": self._critic.variables,
                "target_policy": self._target_policy.variables,
                "target_critic": self._target_critic.variables}

    def served_variables(self) -> dict[str, Sequence[tf.Variable]]:
        return {"policy": self._policy.variables, "critic": self._critic.variables}
