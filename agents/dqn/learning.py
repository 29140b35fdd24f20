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
"""

from __future__ import annotations

from collections.abc import Iterator

import reverb
import sonnet as snt
import tensorflow as tf

from agentkit.counting import Counter
from agentkit.loggers import Logger
from components.learning import (
    LinearDecay,
    QLearnerBase,
    StepLogger,
    all_finite,
)


def huber(x: tf.Tensor, delta: float) -> tf.Tensor:
    """0.5 x^2 for |x| <= delta, delta (|x| - 0.5 delta) beyond."""
    abs_x = tf.abs(x)
    quadratic = tf.minimum(abs_x, delta)
    return 0.5 * quadratic**2 + delta * (abs_x - quadratic)


class DQNLearner(QLearnerBase):
    """Trains a Q-network from replay samples."""

    def __init__(
        self,
        network: snt.Module,
        target_network: snt.Module,
        iterator: Iterator[reverb.ReplaySample],
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
        replay_client: reverb.TFClient | None = None,
        table: str | None = None,
        counter: Counter | None = None,
        logger: Logger | None = None,
        log_every_s: float = 1.0,
    ):
        self._network = network
        self._target_network = target_network
        self._iterator = iterator
        self._schedule = LinearDecay(learning_rate, learning_rate_final, learning_rate_decay_steps)
        self._optimizer = snt.optimizers.Adam(self._schedule.rate, epsilon=adam_epsilon)
        self._target_update_period = target_update_period
        self._tau = float(target_update_tau)
        self._delta = huber_loss_parameter
        self._beta = importance_sampling_exponent
        self._max_gradient_norm = max_gradient_norm
        self._double_q = double_q
        self._replay_client = replay_client
        self._table = table
        self._step_logger = StepLogger(counter, logger, log_every_s)
        self._num_steps = tf.Variable(0, dtype=tf.int64, trainable=False)
        # Create Adam's slots now, so checkpoints can be restored before a step.
        self._optimizer._initialize(self._network.trainable_variables)
        self._step_fn = tf.function(self._step)

    def _step(self, sample: reverb.ReplaySample) -> dict[str, tf.Tensor]:
        o_tm1, a_tm1, r_t, d_t, o_t = sample.data
        keys, probabilities = sample.info.key, sample.info.probability
        with tf.GradientTape() as tape:
            q_tm1 = self._network(o_tm1)
            q_t_target = self._target_network(o_t)
            q_t_selector = self._network(o_t) if self._double_q else q_t_target
            a_t = tf.argmax(q_t_selector, axis=-1, output_type=tf.int32)
            bootstrap = tf.gather(q_t_target, a_t, batch_dims=1)
            y = tf.stop_gradient(r_t + d_t * bootstrap)
            q_a = tf.gather(q_tm1, tf.cast(a_tm1, tf.int32), batch_dims=1)
            td = y - q_a
            loss_per_item = huber(td, self._delta)
            # Importance weights; the 1/N cancels under the normalisation.
            weights = tf.pow(1.0 / tf.cast(probabilities, tf.float32), self._beta)
            weights = weights / tf.reduce_max(weights)
            loss = tf.reduce_mean(weights * loss_per_item)
        variables = self._network.trainable_variables
        gradients = tape.gradient(loss, variables)
        gradients, grad_norm = tf.clip_by_global_norm(gradients, self._max_gradient_norm)
        finite = all_finite([loss, grad_norm])
        if finite:  # A NaN batch changes nothing: not the weights, not the priorities.
            self._apply(gradients, variables, td, keys)
        return {
            "loss": loss,
            "q_mean": tf.reduce_mean(q_a),
            "td_abs_mean": tf.reduce_mean(tf.abs(td)),
            "grad_norm": grad_norm,
            "learning_rate": tf.identity(self._schedule.rate),
            "finite": finite,
        }

    def _apply(self, gradients, variables, td, keys) -> None:
        self._optimizer.apply(gradients, variables)
        self._schedule.update(self._num_steps)
        if self._replay_client is not None:
            priorities = tf.cast(tf.abs(td), tf.float64)
            self._replay_client.update_priorities(self._table, keys, priorities)
        self._num_steps.assign_add(1)
        pairs = zip(self._target_network.variables, self._network.variables)
        if self._tau > 0:
            # Polyak averaging: the target trails the online network smoothly.
            for target, source in pairs:
                target.assign((1.0 - self._tau) * target + self._tau * source)
        elif self._num_steps % self._target_update_period == 0:
            for target, source in pairs:
                target.assign(source)
