"""QR-DQN (Dabney et al. 2018) outside the repository: its own network and its own loss.

Everything else is DQN's: the n-step replay, the batched actors and their
epsilon-greedy exploration, the learner loop (optimizer, clipping, target
copies, priorities). The agent overrides the public hooks only:

- `make_networks`, the builder's one network hook: a Q-network whose
  `quantiles(o)` are [B, A, N] return quantiles and whose call, their mean,
  gives the [B, A] Q-values that DQN's policies act on. The learner's target
  is a second call of this hook, so nothing else needs overriding;
- `learner_class`, a `DQNLearner` whose `loss` reads its public inputs
  (`network`, `target_network`, `double_q`, `importance_sampling_exponent`,
  the sample's `Transition`) and returns the quantile-regression Huber loss
  and the items' new priorities.

Run it with `--agent=my_agents.qr_dqn:QRDQNBuilder` (README.md).
"""

from __future__ import annotations

import dataclasses

import sonnet as snt
import tensorflow as tf

from agentkit.builders import Networks
from agentkit.config import require
from agentkit.specs import EnvironmentSpec
from agents.dqn import DQNBuilder, DQNConfig, DQNLearner
from components.learners import importance_weights


@dataclasses.dataclass
class QRDQNConfig(DQNConfig):
    """DQN's fields (each a flag) and the number of quantiles."""

    num_quantiles: int = 32  # Return quantiles per action (the paper's 200; 32 is enough here).
    hidden_sizes: tuple[int, ...] = (64, 64)  # MLP torso layers.

    def __post_init__(self):
        super().__post_init__()
        require(self.num_quantiles >= 1, "num_quantiles", ">= 1", self.num_quantiles)


class QuantileNetwork(snt.Module):
    """An MLP to [B, A, N] quantiles; called, their mean: [B, A] Q-values."""

    def __init__(self, num_actions: int, num_quantiles: int, hidden_sizes):
        super().__init__(name="quantile_network")
        self._shape = (num_actions, num_quantiles)
        self._torso = snt.nets.MLP(list(hidden_sizes), activate_final=True)
        self._head = snt.Linear(num_actions * num_quantiles)

    def quantiles(self, observation: tf.Tensor) -> tf.Tensor:
        flat = tf.reshape(tf.cast(observation, tf.float32), [tf.shape(observation)[0], -1])
        return tf.reshape(self._head(self._torso(flat)), (-1,) + self._shape)

    def __call__(self, observation: tf.Tensor) -> tf.Tensor:
        return tf.reduce_mean(self.quantiles(observation), axis=-1)


class QRDQNLearner(DQNLearner):
    """DQN's learner (optimizer, targets, the loop) with the quantile-regression loss."""

    def loss(self, sample) -> dict[str, tf.Tensor]:
        t = sample.data
        a_tm1 = tf.cast(t.action, tf.int32)
        theta = tf.gather(self.network.quantiles(t.observation), a_tm1, batch_dims=1)  # [B, N]
        selector = self.network if self.double_q else self.target_network
        a_t = tf.argmax(selector(t.next_observation), axis=-1, output_type=tf.int32)
        theta_t = tf.gather(self.target_network.quantiles(t.next_observation), a_t, batch_dims=1)
        targets = tf.stop_gradient(t.reward[:, None] + t.discount[:, None] * theta_t)
        u = targets[:, None, :] - theta[:, :, None]  # [B, N (theta_i), N (target_j)]
        n = tf.cast(tf.shape(theta)[-1], tf.float32)
        tau = (tf.range(n) + 0.5) / n  # The quantile midpoints that theta_i estimates.
        huber = tf.where(tf.abs(u) <= 1.0, 0.5 * tf.square(u), tf.abs(u) - 0.5)
        weight = tf.abs(tau[None, :, None] - tf.cast(u < 0.0, tf.float32))
        per_item = tf.reduce_sum(tf.reduce_mean(weight * huber, axis=2), axis=1)  # [B]
        weights = importance_weights(sample.info.probability, self.importance_sampling_exponent)
        td = tf.reduce_mean(targets, axis=1) - tf.reduce_mean(theta, axis=1)
        return {"loss": tf.reduce_mean(weights * per_item), "priorities": tf.abs(td),
                "q_mean": tf.reduce_mean(theta), "quantile_loss": tf.reduce_mean(per_item)}


class QRDQNBuilder(DQNBuilder):
    """DQN's builder with QR-DQN's network and learner."""

    config_class = QRDQNConfig
    learner_class = QRDQNLearner

    def make_networks(self, *, spec: EnvironmentSpec) -> Networks:
        network = QuantileNetwork(spec.actions.num_values, self.config.num_quantiles,
                                  self.config.hidden_sizes)
        network(tf.zeros((1,) + tuple(spec.observations.shape), spec.observations.dtype))
        return {"q": network}
