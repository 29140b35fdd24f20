"""The APPO learner: IMPALA's V-trace actor-critic with PPO's clipped surrogate.

With rho_t = pi(a_t|o_t) / mu(a_t|o_t) (mu: the actors' policy, recorded as
logits) and A_t the V-trace policy-gradient advantages
(min(rho_bar_pg, rho_t) (r_t + gamma v_{t+1} - V(o_t))), normalised over the
batch's unmasked steps when `normalize_advantages`:

    pg_loss = -mean_t min(rho_t A_t, clip(rho_t, 1 - eps, 1 + eps) A_t)

The value loss, the entropy bonus, V-trace's targets and the loop are
IMPALA's (`agents/impala/learning.py`). The clip bounds how far one update
moves the policy from the one that acted, which lets an asynchronous learner
take larger steps on stale data than the plain policy gradient.
"""

from __future__ import annotations

import tensorflow as tf

from agents.impala.learning import IMPALALearner
from components.losses import clipped_surrogate_loss


class APPOLearner(IMPALALearner):
    """IMPALALearner whose policy term is the clipped surrogate on V-trace advantages."""

    def __init__(self, *args, clip_epsilon: float = 0.2, normalize_advantages: bool = True,
                 **kwargs):
        self._clip_epsilon = float(clip_epsilon)
        self._normalize = bool(normalize_advantages)
        super().__init__(*args, **kwargs)

    def _policy_loss(self, target_logp: tf.Tensor, behaviour_logp: tf.Tensor,
                     advantages: tf.Tensor, mask: tf.Tensor) -> tf.Tensor:
        taken = mask > 0
        ratios = tf.exp(tf.boolean_mask(target_logp - behaviour_logp, taken))
        advantages = tf.boolean_mask(advantages, taken)
        if self._normalize:
            mean, variance = tf.nn.moments(advantages, axes=[0])
            advantages = (advantages - mean) / (tf.sqrt(variance) + 1e-8)
        return clipped_surrogate_loss(ratios, advantages, self._clip_epsilon)
