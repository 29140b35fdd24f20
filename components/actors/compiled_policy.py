"""The shape of the feed-forward policies that are one TensorFlow function of a batch of
observations (Gaussian noise, the squashed Gaussian): compiled once for the spec's
observations, called from the actor, served as is by the exporter."""

from __future__ import annotations

import tensorflow as tf

from agentkit.specs import EnvironmentSpec
from components.compiled import CompiledFunction, batched_signature


class CompiledFeedForwardPolicy(tf.Module):
    """observation batch -> actions by `_select` (TensorFlow ops only, subclasses give it),
    traced once with a fixed signature (never retraced as the batch size varies)."""

    core_size = 0  # Feed-forward: no state between steps.

    def __init__(self, spec: EnvironmentSpec, name: str):
        super().__init__(name=name)
        self.spec = spec
        self._policy = CompiledFunction(self._select,
                                        input_signature=[batched_signature(spec.observations)])

    def _select(self, observation) -> tf.Tensor:
        raise NotImplementedError

    def __call__(self, observation):
        return self._policy(observation)

    def serve(self, observation) -> dict[str, tf.Tensor]:
        """The policy in TensorFlow ops only (`components.actors.serving` exports it)."""
        return {"actions": self._select(observation)}

    @property
    def num_traces(self) -> int:
        """How many times the policy was traced (1 after warm-up: no retracing)."""
        return self._policy.experimental_get_tracing_count()
