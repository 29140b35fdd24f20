"""The dueling head (Wang et al., 2016): Q = V + A - mean(A)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import sonnet as snt
import tensorflow as tf


class DuelingHead(snt.Module):
    """Separate value and advantage streams, recombined into Q-values.

    Subtracting the mean advantage (rather than the max) makes V and A
    identifiable and keeps the optimisation stable, as in the paper.
    """

    def __init__(self, num_actions: int, hidden_sizes: Sequence[int] = (), name: str = "dueling",
                 mlp: Callable[..., snt.Module] = snt.nets.MLP):
        """`mlp(output_sizes)` makes each stream (noisy layers: `NoisyMLP`)."""
        super().__init__(name=name)
        self._value = mlp(list(hidden_sizes) + [1])
        self._advantage = mlp(list(hidden_sizes) + [num_actions])

    def __call__(self, inputs: tf.Tensor) -> tf.Tensor:
        value = self._value(inputs)
        advantages = self._advantage(inputs)
        return value + advantages - tf.reduce_mean(advantages, axis=-1, keepdims=True)
