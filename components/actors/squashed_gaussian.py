"""Acting with a tanh-squashed Gaussian policy (SAC): sampled while training, its mode at
evaluation; the draws from the policy's own TensorFlow generator, inside the compiled call."""

from __future__ import annotations

import sonnet as snt
import tensorflow as tf

from agentkit.specs import EnvironmentSpec, bounded_continuous_actions
from components.actors.compiled_policy import CompiledFeedForwardPolicy


class SquashedGaussianPolicy(CompiledFeedForwardPolicy):
    """observation batch -> actions inside the spec's bounds: tanh of a Gaussian sample of the
    network's (`components.networks.TanhGaussianPolicy`), or of its mean when `deterministic`."""

    def __init__(self, network: snt.Module, spec: EnvironmentSpec, deterministic: bool = False,
                 seed: int = 0):
        super().__init__(spec, name="squashed_gaussian_policy")
        self._network = network
        self._dtype = bounded_continuous_actions(spec).dtype
        self.deterministic = bool(deterministic)
        self._rng = tf.random.Generator.from_seed(seed)

    def _select(self, observation):
        if self.deterministic:
            squashed = self._network.mode(observation)
        else:
            squashed, _ = self._network.sample(observation, self._rng)
        return tf.cast(self._network.to_action(squashed), self._dtype)
