"""An MLP torso that flattens and casts its input."""

from __future__ import annotations

from collections.abc import Sequence

import sonnet as snt
import tensorflow as tf

from components.networks.initializers import hidden_init

# Hidden-layer nonlinearities by name. tanh is what stable-baselines3's and CleanRL's
# classic-control actor-critics use; ReLU is Sonnet's (and the Q-networks') default.
ACTIVATIONS = {"relu": tf.nn.relu, "tanh": tf.tanh}


class MLPTorso(snt.Module):
    """Flatten -> [Linear -> activation] for each hidden size."""

    def __init__(self, hidden_sizes: Sequence[int], init: str = "default",
                 activation: str = "relu", name: str = "mlp_torso"):
        super().__init__(name=name)
        if not hidden_sizes or any(h < 1 for h in hidden_sizes):
            raise ValueError(f"hidden_sizes must be positive integers, got {list(hidden_sizes)}")
        if activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {', '.join(ACTIVATIONS)}, "
                             f"got {activation!r}")
        self._mlp = snt.nets.MLP(list(hidden_sizes), activate_final=True, w_init=hidden_init(init),
                                 activation=ACTIVATIONS[activation])

    def __call__(self, inputs: tf.Tensor) -> tf.Tensor:
        inputs = tf.cast(inputs, tf.float32)
        return self._mlp(snt.Flatten()(inputs))
