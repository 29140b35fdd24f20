"""Sampling from a softmax policy, recording its logits (IMPALA, and any actor-critic agent)."""

from __future__ import annotations

import sonnet as snt
import tensorflow as tf
import tree

from agentkit.specs import EnvironmentSpec


class SamplingPolicy(tf.Module):
    """observation batch -> (actions, logits); actions sampled, or argmax when greedy.

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
        self._rng = tf.random.Generator.from_seed(seed)
        self.version = tf.Variable(0, dtype=tf.int64, trainable=False, name="policy_version")
        self.spec = spec
        signature = tree.map_structure(
            lambda s: tf.TensorSpec((None,) + tuple(s.shape), s.dtype), spec.observations)
        self._policy = tf.function(self._select, input_signature=[signature])

    def _sample(self, logits):
        if self._greedy:
            actions = tf.argmax(logits, axis=-1, output_type=tf.int32)
        else:
            # Gumbel-max: a categorical sample from the policy's own generator.
            gumbel = -tf.math.log(-tf.math.log(
                self._rng.uniform(tf.shape(logits), 1e-20, 1.0)))
            actions = tf.argmax(logits + gumbel, axis=-1, output_type=tf.int32)
        return tf.cast(actions, self.spec.actions.dtype)

    def _extras(self, logits: tf.Tensor) -> dict[str, tf.Tensor]:
        return {"logits": logits, "policy_version": tf.fill(tf.shape(logits)[:1], self.version)}

    def _select(self, observation):
        # A network with a policy of its own (SeparatePolicyValue) skips the value torso.
        policy_logits = getattr(self._network, "policy_logits", None)
        logits = policy_logits(observation) if policy_logits else self._network(observation)[0]
        return self._sample(logits), self._extras(logits)

    def __call__(self, observation):
        return self._policy(observation)

    @property
    def num_traces(self) -> int:
        return self._policy.experimental_get_tracing_count()


class RecurrentSamplingPolicy(SamplingPolicy):
    """(observations, core states) -> (actions, {"logits", "policy_version"}, new core states)."""

    def __init__(self, network: snt.Module, spec: EnvironmentSpec, greedy: bool = False,
                 seed: int = 0):
        super().__init__(network, spec, greedy, seed)
        observation = tree.map_structure(
            lambda s: tf.TensorSpec((None,) + tuple(s.shape), s.dtype), spec.observations)
        state = tuple(tf.TensorSpec((None, network.core_size), tf.float32) for _ in range(2))
        self._policy = tf.function(self._select_recurrent, input_signature=[observation, state])

    def _select_recurrent(self, observation, state):
        (logits, _), new_state = self._network(observation, state)
        return self._sample(logits), self._extras(logits), new_state

    def __call__(self, observation, state):
        return self._policy(observation, state)
