"""The DQN learner: double, n-step, prioritized Q-learning with a Huber loss.

For a batch of n-step transitions (o_tm1, a_tm1, r_t, d_t, o_t), where r_t
is the discounted n-step return and d_t the total bootstrap discount written
by the adder:

    a*      = argmax_a q(o_t, a)            (online network: double Q)
    y       = r_t + d_t * q_target(o_t, a*)
    td      = y - q(o_tm1, a_tm1)
    loss    = mean_i w_i * huber(td_i)
    w_i     = (1 / (N * P(i)))^beta / max_j w_j   (prioritized replay)

New priorities |td| go back to the table in the same compiled step. The
target network is copied from the online network every
`target_update_period` steps.

With `num_sgd_steps_per_step = K > 1` (Acme's option of the same name) one
call takes a batch of K x batch_size transitions sampled at once and makes
K SGD steps on its K slices, then writes all K x batch_size priorities back
in one update. For small networks most of a step's cost is the call, the
sampling round trip and the priority write, not the arithmetic: K of them
share one of each. Priorities of a slice are those of the weights before
its own step, as with K = 1. A slice whose loss is not finite is skipped
(weights and its items' priorities untouched), the other slices still
apply, and the call then raises NonFiniteLossError.

With `batches_per_call = N > 1` one `step()` runs N such steps, each on a
batch of its own, in one compiled loop: the same updates as N calls,
without the Python between them, and the priorities of the N steps go to
the table in one write at the end of the call. The loop, the slices, the
non-finite guard, the target copies and the priority writes are the shared
learner loop's (`components.learners.SGDLearner`); this module is the loss.
"""

from __future__ import annotations

from collections.abc import Sequence

import reverb
import sonnet as snt
import tensorflow as tf

from components.learners import (
    LearnerIO,
    OptimizerGroup,
    SGDLearner,
    TargetUpdate,
    importance_weights,
)


def huber(x: tf.Tensor, delta: float) -> tf.Tensor:
    """0.5 x^2 for |x| <= delta, delta (|x| - 0.5 delta) beyond."""
    abs_x = tf.abs(x)
    quadratic = tf.minimum(abs_x, delta)
    return 0.5 * quadratic**2 + delta * (abs_x - quadratic)


class DQNLearner(SGDLearner):
    """Trains a Q-network from replay samples.

    A subclass with another loss (Rainbow's, or an agent's outside the repository) overrides
    `loss(sample)` and reads its inputs by these public names: `network` and
    `target_network` (from the builder's `make_networks`), `double_q`, and
    `importance_sampling_exponent` (0 without prioritized replay). The sample is a
    `reverb.ReplaySample`: `sample.data` a `agentkit.types.Transition` of [B, ...] tensors
    (observation, action int32, reward and discount float32 (the adder's n-step return and
    its total bootstrap discount), next_observation, extras), `sample.info.probability` the
    items' sampling probabilities. The returned "priorities" [B] (float, >= 0) replace the
    sampled items' priorities (the table samples in proportion to priority^alpha, its
    `priority_exponent`); new items enter with the |TD| their actor computed with its own
    weights (Ape-X, `--actor_priorities`, on DQN's loss's scale) or else with priority 1.
    """

    def __init__(
        self,
        network: snt.Module,
        target_network: snt.Module,
        io: LearnerIO,
        learning_rate: float,
        target_update_period: int,
        target_update_tau: float = 0.0,
        learning_rate_final: float | None = None,
        learning_rate_decay_steps: int = 0,
        huber_loss_parameter: float = 1.0,
        importance_sampling_exponent: float = 0.4,
        max_gradient_norm: float = 10.0,
        adam_epsilon: float = 1e-8,
        double_q: bool = True,
        num_sgd_steps_per_step: int = 1,
    ):
        self.network = network
        self.target_network = target_network
        self._delta = huber_loss_parameter
        self.importance_sampling_exponent = importance_sampling_exponent
        self.double_q = double_q
        group = OptimizerGroup.adam(network.trainable_variables, learning_rate,
                                    learning_rate_final, learning_rate_decay_steps, adam_epsilon)
        self._optimizer = group.optimizer
        super().__init__(
            io=io,
            groups=[group],
            max_gradient_norm=max_gradient_norm,
            targets=TargetUpdate([(target_network, network)], target_update_period,
                                 target_update_tau),
            sgd_steps_per_batch=num_sgd_steps_per_step,
        )

    def loss(self, sample: reverb.ReplaySample) -> dict[str, tf.Tensor]:
        transitions = sample.data
        o_tm1, a_tm1, o_t = transitions.observation, transitions.action, \
            transitions.next_observation
        r_t, d_t = transitions.reward, transitions.discount
        q_tm1 = self.network(o_tm1)
        q_t_target = self.target_network(o_t)
        q_t_selector = self.network(o_t) if self.double_q else q_t_target
        a_t = tf.argmax(q_t_selector, axis=-1, output_type=tf.int32)
        bootstrap = tf.gather(q_t_target, a_t, batch_dims=1)
        y = tf.stop_gradient(r_t + d_t * bootstrap)
        q_a = tf.gather(q_tm1, tf.cast(a_tm1, tf.int32), batch_dims=1)
        td = y - q_a
        weights = importance_weights(sample.info.probability, self.importance_sampling_exponent)
        return {
            "loss": tf.reduce_mean(weights * huber(td, self._delta)),
            "priorities": tf.abs(td),
            "q_mean": tf.reduce_mean(q_a),
            "td_abs_mean": tf.reduce_mean(tf.abs(td)),
        }

    def network_groups(self) -> dict[str, Sequence[tf.Variable]]:
        return {"q": self.network.variables, "q_target": self.target_network.variables}

    def served_variables(self) -> dict[str, Sequence[tf.Variable]]:
        return self.network_groups()
