"""The R2D2 learner: n-step double Q-learning over stored-state sequences with burn-in.

A batch holds sequences of L steps (observation o_t, action a_t, reward
r_{t+1}, discount d_{t+1}, mask m_t, and the core state h_0 the actor had at
step 0). Both networks start from the stored h_0; the first B steps only
rebuild the state (burn-in, no gradient); the remaining T = L - B steps are
trained:

    q_t      = Q(o_t, h_t)                        online network, t in [B, L)
    a*_t     = argmax_a q_t                       (double Q)
    v_t      = h^-1(Q_target(o_t, h'_t, a*_t))    value rescaling undone
    y_t      = h( sum_{k<j} gamma^k D_{t,k} r_{t+k+1} + gamma^j D_{t,j} v_{t+j} )
    td_t     = y_t - q_t(a_t)
    loss     = mean_i w_i * mean_t 0.5 td_t^2     (over trainable steps)
    priority = eta max_t |td_t| + (1 - eta) mean_t |td_t|

where D_{t,k} is the product of the environment's discounts over the k steps
after t (0 after a termination) and j <= n is cut short where the episode's
last observation or the sequence's end comes first, so a truncated episode
still bootstraps from its last observation. A step t is trainable when its
action was taken and a later step of the sequence exists to bootstrap from.
"""

from __future__ import annotations

from collections.abc import Sequence

import reverb
import sonnet as snt
import tensorflow as tf
import tree

from components.learners import (
    LearnerIO,
    OptimizerGroup,
    SGDLearner,
    TargetUpdate,
    importance_weights,
)
from components.losses import signed_hyperbolic, signed_parabolic


def _shift(x: tf.Tensor, k: int) -> tf.Tensor:
    """x[t + k] at row t, zeros past the end (time-major)."""
    if k == 0:
        return x
    return tf.concat([x[k:], tf.zeros_like(x[:k])], axis=0)


def trainable_mask(mask: tf.Tensor) -> tf.Tensor:
    """Steps with an action taken and a later step to bootstrap from: mask, last row 0."""
    return tf.concat([mask[:-1], tf.zeros_like(mask[-1:])], axis=0)


def rescaled_n_step_targets(
    q_online: tf.Tensor,
    q_target: tf.Tensor,
    rewards: tf.Tensor,
    discounts: tf.Tensor,
    mask: tf.Tensor,
    gamma: float,
    n: int,
    eps: float,
) -> tf.Tensor:
    """y_t of the module docstring, time-major: q [T, B, A]; the rest [T, B].

    Rows that are not trainable get a target too (unused: their loss is masked).
    """
    a_star = tf.argmax(q_online, axis=-1, output_type=tf.int32)
    values = signed_parabolic(tf.gather(q_target, a_star, batch_dims=2), eps)
    can_continue = trainable_mask(mask)  # Step t+1 has an action and a step after it.
    alive = can_continue  # Still summing rewards for the target of row t.
    returns = tf.zeros_like(rewards)
    scale = tf.ones_like(rewards)  # gamma^k D_{t,k}.
    for k in range(n):
        returns += alive * scale * _shift(rewards, k)
        scale = scale * gamma * _shift(discounts, k)
        stop = tf.ones_like(alive) if k == n - 1 else 1.0 - _shift(can_continue, k + 1)
        returns += alive * stop * scale * _shift(values, k + 1)
        alive = alive * (1.0 - stop)
    return signed_hyperbolic(returns, eps)


def sequence_priorities(abs_td: tf.Tensor, mask: tf.Tensor, eta: float) -> tf.Tensor:
    """eta max_t |td_t| + (1 - eta) mean_t |td_t| over each sequence's trainable steps [B]."""
    count = tf.maximum(tf.reduce_sum(mask, axis=0), 1.0)
    mean = tf.reduce_sum(abs_td * mask, axis=0) / count
    return eta * tf.reduce_max(abs_td * mask, axis=0) + (1.0 - eta) * mean


def _time_major(x: tf.Tensor) -> tf.Tensor:
    x = tf.convert_to_tensor(x)
    return tf.transpose(x, [1, 0] + list(range(2, x.shape.rank)))


class R2D2Learner(SGDLearner):
    """Trains a recurrent Q-network from replayed sequences."""

    def __init__(
        self,
        network: snt.Module,
        target_network: snt.Module,
        io: LearnerIO,
        burn_in: int,
        discount: float,
        n_step: int,
        learning_rate: float,
        target_update_period: int,
        learning_rate_final: float | None = None,
        learning_rate_decay_steps: int = 0,
        value_rescaling_eps: float = 1e-3,
        importance_sampling_exponent: float = 0.6,
        max_priority_weight: float = 0.9,
        max_gradient_norm: float = 40.0,
        adam_epsilon: float = 1e-3,
    ):
        self._network = network
        self._target_network = target_network
        self._burn_in = int(burn_in)
        self._discount = float(discount)
        self._n_step = int(n_step)
        self._eps = float(value_rescaling_eps)
        self._beta = float(importance_sampling_exponent)
        self._eta = float(max_priority_weight)
        group = OptimizerGroup.adam(network.trainable_variables, learning_rate,
                                    learning_rate_final, learning_rate_decay_steps, adam_epsilon)
        self._optimizer = group.optimizer
        super().__init__(
            io=io,
            groups=[group],
            max_gradient_norm=max_gradient_norm,
            targets=TargetUpdate([(target_network, network)], target_update_period),
        )

    def _burn_in_states(self, observations, state):
        """Both networks' core states after the burn-in steps, as constants."""
        if self._burn_in == 0:
            return state, state
        burn = tree.map_structure(lambda o: o[:self._burn_in], observations)
        _, online = self._network.unroll_core(burn, state)
        _, target = self._target_network.unroll_core(burn, state)
        return (tree.map_structure(tf.stop_gradient, online),
                tree.map_structure(tf.stop_gradient, target))

    def loss(self, sample: reverb.ReplaySample) -> dict[str, tf.Tensor]:
        """The loss, the sequences' priorities and metrics for one batch (batch-major)."""
        data = sample.data
        observations = tree.map_structure(_time_major, data["observation"])
        state = tree.map_structure(lambda s: s[:, 0], data["extras"]["core_state"])
        online_state, target_state = self._burn_in_states(observations, state)
        trained = tree.map_structure(lambda o: o[self._burn_in:], observations)

        def tail(name):
            return _time_major(data[name])[self._burn_in:]

        actions = tf.cast(tail("action"), tf.int32)
        rewards, discounts, mask = tail("reward"), tail("discount"), tail("mask")
        q = self._network.unroll(trained, online_state)  # [T, B, A]
        q_target = tf.stop_gradient(self._target_network.unroll(trained, target_state))
        targets = tf.stop_gradient(rescaled_n_step_targets(
            q, q_target, rewards, discounts, mask, self._discount, self._n_step, self._eps))
        q_a = tf.gather(q, actions, batch_dims=2)
        td = targets - q_a
        trainable = trainable_mask(mask)
        count = tf.maximum(tf.reduce_sum(trainable, axis=0), 1.0)
        loss_per_sequence = tf.reduce_sum(0.5 * tf.square(td) * trainable, axis=0) / count
        weights = importance_weights(sample.info.probability, self._beta)
        return {
            "loss": tf.reduce_mean(weights * loss_per_sequence),
            "priorities": sequence_priorities(tf.abs(td), trainable, self._eta),
            "q_mean": tf.reduce_sum(q_a * trainable) / tf.maximum(tf.reduce_sum(trainable), 1.0),
            "td_abs_mean": tf.reduce_sum(tf.abs(td) * trainable)
            / tf.maximum(tf.reduce_sum(trainable), 1.0),
        }

    def network_groups(self) -> dict[str, Sequence[tf.Variable]]:
        return {"q": self._network.variables, "q_target": self._target_network.variables}

    def served_variables(self) -> dict[str, Sequence[tf.Variable]]:
        return self.network_groups()
