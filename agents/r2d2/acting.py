"""R2D2's policy: epsilon-greedy over a recurrent Q-network, one compiled call per batch."""

from __future__ import annotations

import tensorflow as tf
import tree

from agentkit.specs import EnvironmentSpec, num_discrete_actions
from components.networks import RecurrentQNetwork


class RecurrentEpsilonGreedyPolicy(tf.Module):
    """(observations, core states) -> (actions, {}, new core states).

    a = argmax_a Q(o, h, a) with probability 1 - epsilon, else uniform. The
    epsilon is fixed (Ape-X gives each actor its own): R2D2 does not decay it.
    """

    def __init__(self, network: RecurrentQNetwork, spec: EnvironmentSpec, epsilon: float,
                 seed: int = 0):
        super().__init__(name="recurrent_epsilon_greedy")
        self._network = network
        self.spec = spec
        self.epsilon = float(epsilon)
        self._num_actions = num_discrete_actions(spec)
        self._rng = tf.random.Generator.from_seed(seed)
        observation = tree.map_structure(
            lambda s: tf.TensorSpec((None,) + tuple(s.shape), s.dtype), spec.observations)
        state = tuple(tf.TensorSpec((None, network.core_size), tf.float32) for _ in range(2))
        # A fixed signature: traced once, never retraced as the batch size varies.
        self._policy = tf.function(self._select, input_signature=[observation, state])

    def _select(self, observation, state):
        q_values, new_state = self._network(observation, state)
        greedy = tf.argmax(q_values, axis=-1, output_type=tf.int32)
        batch = tf.shape(q_values)[0]
        random_actions = self._rng.uniform([batch], 0, self._num_actions, dtype=tf.int32)
        explore = self._rng.uniform([batch]) < self.epsilon
        actions = tf.cast(tf.where(explore, random_actions, greedy), self.spec.actions.dtype)
        return actions, {}, new_state

    def __call__(self, observation, state):
        return self._policy(observation, state)

    @property
    def num_traces(self) -> int:
        """How many times the policy was traced (1 after warm-up: no retracing)."""
        return self._policy.experimental_get_tracing_count()
