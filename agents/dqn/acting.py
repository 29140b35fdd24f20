"""DQN's behaviour and evaluation policies: epsilon-greedy over the Q-network.

Exploration lives inside the compiled policy, with a linear epsilon schedule
over the steps this policy has taken, so acting costs one call per batch.
"""

from __future__ import annotations

import sonnet as snt
import tensorflow as tf
import tree

from agentkit.specs import EnvironmentSpec, num_discrete_actions


class EpsilonGreedyPolicy(tf.Module):
    """a = argmax_a Q(o, a) with probability 1 - epsilon, else uniform.

    epsilon decays linearly from `epsilon_init` to `epsilon_final` over
    `decay_steps` observations (each batch row counts one), then stays.
    """

    def __init__(
        self,
        network: snt.Module,
        spec: EnvironmentSpec,
        epsilon_init: float,
        epsilon_final: float,
        decay_steps: int,
        seed: int = 0,
    ):
        super().__init__(name="epsilon_greedy")
        self._network = network
        self._num_actions = num_discrete_actions(spec)
        self._epsilon_init = float(epsilon_init)
        self._epsilon_final = float(epsilon_final)
        self._decay_steps = int(decay_steps)
        self._steps = tf.Variable(0, dtype=tf.int64, trainable=False)
        self._rng = tf.random.Generator.from_seed(seed)
        signature = tree.map_structure(
            lambda s: tf.TensorSpec((None,) + tuple(s.shape), s.dtype), spec.observations
        )
        # A fixed signature: traced once, never retraced as the batch size varies.
        self._policy = tf.function(self._select, input_signature=[signature])

    def epsilon(self) -> float:
        return float(self._epsilon(self._steps))

    def _epsilon(self, steps: tf.Tensor) -> tf.Tensor:
        if self._decay_steps == 0:
            return tf.constant(self._epsilon_final)
        fraction = tf.minimum(tf.cast(steps, tf.float32) / self._decay_steps, 1.0)
        return self._epsilon_init + (self._epsilon_final - self._epsilon_init) * fraction

    def _select(self, observation):
        q_values = self._network(observation)
        greedy = tf.argmax(q_values, axis=-1, output_type=tf.int32)
        batch = tf.shape(q_values)[0]
        random_actions = self._rng.uniform([batch], 0, self._num_actions, dtype=tf.int32)
        explore = self._rng.uniform([batch]) < self._epsilon(self._steps)
        self._steps.assign_add(tf.cast(batch, tf.int64))
        return tf.where(explore, random_actions, greedy)

    def __call__(self, observation):
        return self._policy(observation)

    @property
    def num_traces(self) -> int:
        """How many times the policy was traced (1 after warm-up: no retracing)."""
        return self._policy.experimental_get_tracing_count()
