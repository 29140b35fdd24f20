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
batch of its own, in one compiled loop (`components.step_loop.StepLoop`):
the same updates as N calls, without the Python between them, and the
priorities of the N steps go to the table in one write at the end of the
call (`PriorityWriter`).
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
from components.optimizers import FusedAdam


def huber(x: tf.Tensor, delta: float) -> tf.Tensor:
    """0.5 x^2 for |x| <= delta, delta (|x| - 0.5 delta) beyond."""
    abs_x = tf.abs(x)
    quadratic = tf.minimum(abs_x, delta)
    return 0.5 * quadratic**2 + delta * (abs_x - quadratic)


# The metrics that a call of K SGD steps reports as means over its steps.
AVERAGED_METRICS = ("loss", "q_mean", "td_abs_mean", "grad_norm")


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
        num_sgd_steps_per_step: int = 1,
        batches_per_call: int = 1,
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
        self._optimizer = FusedAdam(self._schedule.rate, epsilon=adam_epsilon)
        self._target_update_period = target_update_period
        self._tau = float(target_update_tau)
        self._delta = huber_loss_parameter
        self._beta = importance_sampling_exponent
        self._max_gradient_norm = max_gradient_norm
        self._double_q = double_q
        if num_sgd_steps_per_step < 1:
            raise ValueError(f"num_sgd_steps_per_step must be >= 1, got {num_sgd_steps_per_step}")
        self._steps_per_call = int(num_sgd_steps_per_step)
        self._setup_step_loop(batches_per_call, replay_client, table)
        self._step_logger = StepLogger(counter, logger, log_every_s)
        self._num_steps = tf.Variable(0, dtype=tf.int64, trainable=False)
        # Create Adam's slots now, so checkpoints can be restored before a step.
        self._optimizer._initialize(self._network.trainable_variables)
        self._step_fn = tf.function(self._step)

    def _step(self, sample: reverb.ReplaySample) -> dict[str, tf.Tensor]:
        keys, probabilities = sample.info.key, sample.info.probability
        if self._steps_per_call == 1:
            metrics, td, finite = self._sgd_step(sample.data, probabilities)
            if finite:  # A NaN batch changes nothing: not the weights, not the priorities.
                self._write_priorities(keys, tf.abs(td))
            return metrics
        # [K * B, ...] -> K slices of [B, ...], one SGD step on each.
        k = self._steps_per_call
        slices = tf.nest.map_structure(
            lambda x: tf.reshape(x, tf.concat([[k, -1], tf.shape(x)[1:]], axis=0)),
            (sample.data, probabilities))
        tds = tf.TensorArray(tf.float32, size=k)
        kept = tf.TensorArray(tf.bool, size=k)
        sums = {name: tf.constant(0.0) for name in AVERAGED_METRICS}
        for i in tf.range(k):
            data_i, probabilities_i = tf.nest.map_structure(lambda x, i=i: x[i], slices)
            metrics, td, finite = self._sgd_step(data_i, probabilities_i)
            tds = tds.write(i, td)
            kept = kept.write(i, tf.fill(tf.shape(td), finite))
            sums = {name: sums[name] + metrics[name] for name in AVERAGED_METRICS}
        # Only the slices whose step was applied give their items new priorities.
        kept = kept.concat()
        self._write_priorities(tf.boolean_mask(keys, kept),
                               tf.abs(tf.boolean_mask(tds.concat(), kept)))
        # Means over the K steps; `finite` is False if any step was skipped.
        means = {name: value / float(k) for name, value in sums.items()}
        means["finite"] = tf.reduce_all(kept)
        means["learning_rate"] = tf.identity(self._schedule.rate)
        return means

    def _sgd_step(self, data, probabilities) -> tuple[dict[str, tf.Tensor], tf.Tensor, tf.Tensor]:
        """One update on one batch: (metrics, td, whether it was applied)."""
        o_tm1, a_tm1, r_t, d_t, o_t = data
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
            self._apply(gradients, variables)
        metrics = {
            "loss": loss,
            "q_mean": tf.reduce_mean(q_a),
            "td_abs_mean": tf.reduce_mean(tf.abs(td)),
            "grad_norm": grad_norm,
            "learning_rate": tf.identity(self._schedule.rate),
            "finite": finite,
        }
        return metrics, td, finite

    def _apply(self, gradients, variables) -> None:
        self._optimizer.apply(gradients, variables)
        self._schedule.update(self._num_steps)
        self._num_steps.assign_add(1)
        pairs = zip(self._target_network.variables, self._network.variables)
        if self._tau > 0:
            # Polyak averaging: the target trails the online network smoothly.
            for target, source in pairs:
                target.assign((1.0 - self._tau) * target + self._tau * source)
        elif self._num_steps % self._target_update_period == 0:
            for target, source in pairs:
                target.assign(source)
