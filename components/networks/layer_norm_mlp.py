"""An MLP whose first layer is layer-normalised and squashed: stable inputs for actor-critics."""

from __future__ import annotations

from collections.abc import Sequence

import sonnet as snt
import tensorflow as tf


class LayerNormMLP(snt.Module):
    """Linear -> LayerNorm -> tanh, then [Linear -> ELU] for the remaining sizes.

    Normalising the first layer keeps its output in a fixed range whatever the
    scale of the observation (Pendulum's angular velocity reaches 8, a
    control-suite state mixes positions and velocities), so a critic's
    gradients for the policy do not blow up when an input drifts (the torso of
    Acme's D4PG and DDPG). Weights start uniform with a fan-out variance of 1/3.
    """

    def __init__(self, hidden_sizes: Sequence[int], activate_final: bool = True,
                 name: str = "layer_norm_mlp"):
        super().__init__(name=name)
        sizes = [int(h) for h in hidden_sizes]
        if not sizes or min(sizes) < 1:
            raise ValueError(f"hidden_sizes must be positive integers, got {list(hidden_sizes)}")
        w_init = snt.initializers.VarianceScaling(1 / 3, mode="fan_out", distribution="uniform")
        self._first = snt.Linear(sizes[0], w_init=w_init)
        self._norm = snt.LayerNorm(axis=-1, create_scale=True, create_offset=True)
        self._rest = snt.nets.MLP(sizes[1:], w_init=w_init, activation=tf.nn.elu,
                                  activate_final=activate_final) if len(sizes) > 1 else None

    def __call__(self, inputs: tf.Tensor) -> tf.Tensor:
        out = tf.tanh(self._norm(self._first(inputs)))
        return self._rest(out) if self._rest is not None else out
