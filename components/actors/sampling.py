"""Sampling from a softmax policy, recording its logits (IMPALA, and any actor-critic agent)."""

from __future__ import annotations

from typing import Any

import numpy as np
import sonnet as snt
import tensorflow as tf

from agentkit.specs import EnvironmentSpec, num_discrete_actions
from components.compiled import CompiledFunction, batched_signature, core_state_signature


class SamplingPolicy(tf.Module):
    """observation batch -> (actions, {"logits", "policy_version"}), as numpy arrays; actions
    sampled, or argmax when greedy.

    The logits go to the unroll adder: the learner needs the behaviour
    policy's probabilities for V-trace's importance ratios. So does
    `policy_version`, the learner step of the weights that acted (the
    variable client sets `version` with the weights): the learner logs the
    policy lag from it.
    """

    def __init__(self, network: snt.Module, spec: EnvironmentSpec, greedy: bool = False,
                 seed: int = 0):
        super().__init__(name="sampling_policy")
        self._network = network
        self._greedy = greedy
        self._rng = np.random.default_rng(seed)
        self._action_dtype = np.dtype(spec.actions.dtype)
        self.version = tf.Variable(0, dtype=tf.int64, trainable=False, name="policy_version")
        self.spec = spec
        # Sampling in TensorFlow ops, for the policy served outside the toolkit (`serve`).
        self._serving_rng = tf.random.Generator.from_seed(seed)
        self._policy = CompiledFunction(self._logits,
                                        input_signature=[batched_signature(spec.observations)])

    @staticmethod
    def extras_spec(spec: EnvironmentSpec) -> dict[str, tf.TensorSpec]:
        """What the policy records with each action, per environment: its logits and the
        weights' version (the spec of the adders' extras)."""
        return {"logits": tf.TensorSpec((num_discrete_actions(spec),), tf.float32),
                "policy_version": tf.TensorSpec((), tf.int64)}

    def _sample(self, logits: np.ndarray) -> np.ndarray:
        """Actions for a batch of logits, in numpy: on a small network the few sampling ops
        cost a third of the compiled call (0.15 of 0.42 ms on CartPole here)."""
        if self._greedy:
            return np.argmax(logits, axis=-1).astype(self._action_dtype)
        # Gumbel-max: a categorical sample from the policy's own generator.
        gumbel = -np.log(-np.log(self._rng.uniform(1e-20, 1.0, logits.shape)))
        return np.argmax(logits + gumbel, axis=-1).astype(self._action_dtype)

    def _extras(self, logits: np.ndarray, version: np.ndarray) -> dict[str, np.ndarray]:
        return {"logits": logits, "policy_version": np.full(len(logits), version, np.int64)}

    def _policy_logits(self, observation) -> tf.Tensor:
        # A network with a policy of its own (SeparatePolicyValue) skips the value torso.
        policy_logits = getattr(self._network, "policy_logits", None)
        return policy_logits(observation) if policy_logits else self._network(observation)[0]

    def _logits(self, observation):
        return self._policy_logits(observation), tf.identity(self.version)

    def __call__(self, observation) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        logits, version = self._policy(observation)
        logits = logits.numpy()
        return self._sample(logits), self._extras(logits, version.numpy())

    @property
    def num_traces(self) -> int:
        return self._policy.experimental_get_tracing_count()

    core_size = 0  # Feed-forward: no state between steps.

    def _served_actions(self, logits: tf.Tensor) -> tf.Tensor:
        """`_sample` in TensorFlow ops: argmax when greedy, else a Gumbel-max sample from
        the policy's TensorFlow generator (its draws are not the numpy ones, the distribution
        is the same)."""
        if not self._greedy:
            uniform = self._serving_rng.uniform(tf.shape(logits), 1e-20, 1.0)
            logits = logits - tf.math.log(-tf.math.log(uniform))
        return tf.cast(tf.argmax(logits, axis=-1), self._action_dtype)

    def serve(self, observation) -> dict[str, tf.Tensor]:
        """The policy in TensorFlow ops only (`components.actors.serving` exports it): its
        actions and logits."""
        logits = self._policy_logits(observation)
        return {"actions": self._served_actions(logits), "logits": logits}


class RecurrentSamplingPolicy(SamplingPolicy):
    """(observations, core states) -> (actions, {"logits", "policy_version"}, new core states)."""

    def __init__(self, network: snt.Module, spec: EnvironmentSpec, greedy: bool = False,
                 seed: int = 0):
        super().__init__(network, spec, greedy, seed)
        self.core_size = int(network.core_size)
        self._policy = CompiledFunction(self._select_recurrent, input_signature=[
            batched_signature(spec.observations), core_state_signature(self.core_size)])

    def _select_recurrent(self, observation, state):
        (logits, _), new_state = self._network(observation, state)
        return logits, tf.identity(self.version), new_state

    def __call__(self, observation, state):
        logits, version, new_state = self._policy(observation, state)
        logits = logits.numpy()
        return self._sample(logits), self._extras(logits, version.numpy()), new_state

    def serve(self, observation, state) -> dict[str, Any]:
        (logits, _), new_state = self._network(observation, state)
        return {"actions": self._served_actions(logits), "logits": logits, "state": new_state}
