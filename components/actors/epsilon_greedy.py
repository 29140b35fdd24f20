"""Epsilon-greedy policies over a Q-network (DQN, R2D2, and any value-based agent).

Exploration lives inside the compiled policy, so acting costs one call per
batch: a linear epsilon schedule over the steps the policy has taken
(`EpsilonGreedyPolicy`), or a fixed epsilon over a recurrent network
(`RecurrentEpsilonGreedyPolicy`, R2D2's Ape-X actors).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import sonnet as snt
import tensorflow as tf

from agentkit.specs import EnvironmentSpec, num_discrete_actions
from components.compiled import CompiledFunction, batched_signature, core_state_signature


def epsilon_greedy_actions(q_values: tf.Tensor, epsilon: tf.Tensor, rng: tf.random.Generator,
                           num_actions: int) -> tf.Tensor:
    """argmax_a q with probability 1 - epsilon, else a uniform action, for each batch row."""
    greedy = tf.argmax(q_values, axis=-1, output_type=tf.int32)
    batch = tf.shape(q_values)[0]
    random_actions = rng.uniform([batch], 0, num_actions, dtype=tf.int32)
    explore = rng.uniform([batch]) < epsilon
    return tf.where(explore, random_actions, greedy)


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
        self.spec = spec
        self._num_actions = num_discrete_actions(spec)
        self._epsilon_init = float(epsilon_init)
        self._epsilon_final = float(epsilon_final)
        self._decay_steps = int(decay_steps)
        self._steps = tf.Variable(0, dtype=tf.int64, trainable=False)
        self._rng = tf.random.Generator.from_seed(seed)
        # A fixed signature: traced once, never retraced as the batch size varies.
        self._policy = CompiledFunction(self._select,
                                        input_signature=[batched_signature(spec.observations)])

    def start_at(self, steps: int) -> None:
        """Goes on with the schedule from `steps` observations (a resumed or rebuilt actor),
        not from epsilon_init."""
        self._steps.assign(int(steps))

    def epsilon(self) -> float:
        return float(self._epsilon(self._steps))

    def _epsilon(self, steps: tf.Tensor) -> tf.Tensor:
        if self._decay_steps == 0:
            return tf.constant(self._epsilon_final)
        fraction = tf.minimum(tf.cast(steps, tf.float32) / self._decay_steps, 1.0)
        return self._epsilon_init + (self._epsilon_final - self._epsilon_init) * fraction

    def _select(self, observation):
        return self.select_from_q_values(self._network(observation))

    def select_from_q_values(self, q_values: tf.Tensor) -> tf.Tensor:
        """Epsilon-greedy actions for a batch of Q-values (advances the schedule)."""
        actions = epsilon_greedy_actions(q_values, self._epsilon(self._steps), self._rng,
                                         self._num_actions)
        self._steps.assign_add(tf.cast(tf.shape(q_values)[0], tf.int64))
        return actions

    def __call__(self, observation):
        return self._policy(observation)

    core_size = 0  # Feed-forward: no state between steps.

    def serve(self, observation) -> dict[str, tf.Tensor]:
        """The policy in TensorFlow ops only (`components.actors.serving` exports it): its
        actions, and the Q-values they come from."""
        q_values = self._network(observation)
        return {"actions": tf.cast(self.select_from_q_values(q_values), self.spec.actions.dtype),
                "q_values": q_values}

    @property
    def num_traces(self) -> int:
        """How many times the policy was traced (1 after warm-up: no retracing)."""
        return self._policy.experimental_get_tracing_count()


class RecurrentEpsilonGreedyPolicy(tf.Module):
    """(observations, core states) -> (actions, {}, new core states).

    a = argmax_a Q(o, h, a) with probability 1 - epsilon, else uniform. The
    epsilon is fixed (Ape-X gives each actor its own): R2D2 does not decay it.
    A sequence of epsilons gives row r of a call epsilons[r % len(epsilons)]: each
    environment of a batched actor its own (Ape-X over environments, not actors).
    """

    def __init__(self, network: snt.Module, spec: EnvironmentSpec,
                 epsilon: float | Sequence[float], seed: int = 0):
        super().__init__(name="recurrent_epsilon_greedy")
        self._network = network
        self.spec = spec
        self.epsilons = tuple(float(e) for e in np.atleast_1d(epsilon))
        if not self.epsilons or not all(0.0 <= e <= 1.0 for e in self.epsilons):
            raise ValueError(f"epsilon: each must be in [0, 1], got {epsilon!r}")
        self._epsilons = tf.constant(self.epsilons, tf.float32)
        self._num_actions = num_discrete_actions(spec)
        self._rng = tf.random.Generator.from_seed(seed)
        self.core_size = int(network.core_size)
        # A fixed signature: traced once, never retraced as the batch size varies.
        self._policy = CompiledFunction(self._select, input_signature=[
            batched_signature(spec.observations), core_state_signature(self.core_size)])

    def _select(self, observation, state):
        served = self.serve(observation, state)
        return served["actions"], {}, served["state"]

    def __call__(self, observation, state):
        return self._policy(observation, state)

    def serve(self, observation, state) -> dict[str, Any]:
        """The policy in TensorFlow ops only (`components.actors.serving` exports it): its
        actions, the Q-values they come from and the core's next state."""
        q_values, new_state = self._network(observation, state)
        rows = tf.range(tf.shape(q_values)[0])
        epsilon = tf.gather(self._epsilons, rows % len(self.epsilons))
        actions = epsilon_greedy_actions(q_values, epsilon, self._rng, self._num_actions)
        return {"actions": tf.cast(actions, self.spec.actions.dtype), "q_values": q_values,
                "state": new_state}

    @property
    def num_traces(self) -> int:
        """How many times the policy was traced (1 after warm-up: no retracing)."""
        return self._policy.experimental_get_tracing_count()
