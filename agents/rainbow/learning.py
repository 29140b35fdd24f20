"""The Rainbow learner: distributional (C51), double, n-step, prioritized Q-learning.

For a batch of n-step transitions (o_tm1, a_tm1, r_t, d_t, o_t), with r_t the
discounted n-step return and d_t the bootstrap discount the adder wrote, and
atoms z_1..z_N:

    a*      = argmax_a Q(o_t, a)              (online network's mean: double Q)
    target  = Phi(r_t + d_t z, p_target(o_t, a*))   (projected onto z, no gradient)
    ce_i    = -sum_j target_j log p(o_tm1, a_tm1)_j
    loss    = mean_i w_i ce_i,  priority_i = ce_i     (prioritized replay)

Noisy layers draw fresh noise in every forward pass (online at o_tm1, online
at o_t for the selection, target at o_t). The loop around the loss (clipping,
the non-finite guard, priority write-back, the periodic target copy) is the
shared `components.learners.SGDLearner`.
"""

from __future__ import annotations

import reverb
import tensorflow as tf

from agents.dqn.learning import DQNLearner
from components.learners import importance_weights
from components.losses import categorical_double_q_loss


class RainbowLearner(DQNLearner):
    """DQN's learner (optimizer, targets, the loop) with the categorical loss."""

    def loss(self, sample: reverb.ReplaySample) -> dict[str, tf.Tensor]:
        transitions = sample.data
        o_tm1, o_t = transitions.observation, transitions.next_observation
        a_tm1 = tf.cast(transitions.action, tf.int32)
        logits_tm1 = self.network.logits(o_tm1)
        logits_t = self.target_network.logits(o_t)
        if self.double_q:
            q_t_selector = self.network(o_t)
        else:
            q_t_selector = self.target_network.q_values(logits_t)
        cross_entropy = categorical_double_q_loss(
            logits_tm1, a_tm1, transitions.reward, transitions.discount, logits_t, q_t_selector,
            self.network.atoms)
        weights = importance_weights(sample.info.probability, self.importance_sampling_exponent)
        q_a = tf.gather(self.network.q_values(logits_tm1), a_tm1, batch_dims=1)
        return {
            "loss": tf.reduce_mean(weights * cross_entropy),
            "priorities": cross_entropy,
            "q_mean": tf.reduce_mean(q_a),
            "cross_entropy_mean": tf.reduce_mean(cross_entropy),
        }
