"""An MLP torso that flattens and casts its input."""

from __future__ import annotations

from collections.abc import Sequence

import sonnet as snt
import tensorflow as tf

from components.networks.initializers import hidden_init


class MLPTorso(snt.Module):
    """Flatten -> [Linear -> ReLU] for each hidden size."""

    def __init__(self, hidden_sizes: Sequence[int], init: str = "default",
                 name: str = "mlp_torso"):
        super().__init__(name=name)
        if not hidden_sizes or any(h < 1 for h in hidden_sizes):
            raise ValueError(f"hidden_sizes must be positive integers, got {list(hidden_sizes)}")
        self._mlp = snt.nets.MLP(list(hidden_sizes), activate_final=True, w_init=hidden_init(init))

    def __call__(self, inputs: tf.Tensor) -> tf.Tensor:
        inputs = tf.cast(inputs, tf.float32)
        return self._mlp(snt.Flatten()(inputs))
