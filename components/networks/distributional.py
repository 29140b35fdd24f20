"""A distributional critic: Q(o, a) as a categorical distribution over fixed atoms (D4PG)."""

from __future__ import annotations

from collections.abc import Sequence

import sonnet as snt
import tensorflow as tf

from components.networks.layer_norm_mlp import LayerNormMLP


class DistributionalCritic(snt.Module):
    """(observation, action) -> logits [B, num_atoms] over `atoms` = linspace(v_min, v_max).

    The mean of the distribution, sum_j softmax(logits)_j * atoms_j, is the
    Q-value a deterministic policy climbs. With `layer_norm`, the torso on
    [o, a] is a `LayerNormMLP`.
    """

    def __init__(self, hidden_sizes: Sequence[int], v_min: float, v_max: float,
                 num_atoms: int = 51, layer_norm: bool = False,
                 name: str = "distributional_critic"):
        super().__init__(name=name)
        if num_atoms < 2 or not v_min < v_max:
            raise ValueError(f"need num_atoms >= 2 and v_min < v_max, got {num_atoms}, "
                             f"[{v_min}, {v_max}]")
        self.atoms = tf.linspace(float(v_min), float(v_max), int(num_atoms))
        if layer_norm:
            self._mlp = snt.Sequential([LayerNormMLP(hidden_sizes), snt.Linear(int(num_atoms))])
        else:
            self._mlp = snt.nets.MLP(list(hidden_sizes) + [int(num_atoms)], activate_final=False)

    def __call__(self, observation: tf.Tensor, action: tf.Tensor) -> tf.Tensor:
        flat_o = snt.Flatten()(tf.cast(observation, tf.float32))
        flat_a = snt.Flatten()(tf.cast(action, tf.float32))
        return self._mlp(tf.concat([flat_o, flat_a], axis=-1))

    def mean(self, logits: tf.Tensor) -> tf.Tensor:
        """The expected value [B] of the distribution given by `logits`."""
        return tf.reduce_sum(tf.nn.softmax(logits) * self.atoms, axis=-1)
