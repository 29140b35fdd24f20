"""A per-action categorical Q head (C51, Rainbow): a return distribution for every action.

For features h, atoms z_1..z_N = linspace(v_min, v_max, N) and actions a:

    logits(h)[a, j]   = A(h)[a, j]                          (plain)
                      = V(h)[j] + A(h)[a, j] - mean_a' A(h)[a', j]   (dueling)
    p(h)[a, j]        = softmax_j logits(h)[a, j]
    Q(h, a)           = sum_j p(h)[a, j] z_j

The dueling form is Rainbow's: value and advantage streams combined per
atom, in logit space, before the softmax.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import sonnet as snt
import tensorflow as tf


class CategoricalQHead(snt.Module):
    """features [B, F] -> logits [B, num_actions, num_atoms]; `q_values(logits)` -> [B, A]."""

    def __init__(self, num_actions: int, num_atoms: int = 51, v_min: float = -10.0,
                 v_max: float = 10.0, hidden_sizes: Sequence[int] = (), dueling: bool = False,
                 mlp: Callable[..., snt.Module] = snt.nets.MLP, name: str = "categorical_q_head"):
        """`mlp(output_sizes, name=...)` makes each stream (noisy layers: `NoisyMLP`)."""
        super().__init__(name=name)
        if num_actions < 1:
            raise ValueError(f"num_actions must be >= 1, got {num_actions}")
        if num_atoms < 2 or not v_min < v_max:
            raise ValueError(f"need num_atoms >= 2 and v_min < v_max, got {num_atoms}, "
                             f"[{v_min}, {v_max}]")
        self.num_actions = int(num_actions)
        self.num_atoms = int(num_atoms)
        self.atoms = tf.linspace(float(v_min), float(v_max), self.num_atoms)
        self._dueling = dueling
        hidden = list(hidden_sizes)
        self._advantage = mlp(hidden + [self.num_actions * self.num_atoms], name="advantage")
        self._value = mlp(hidden + [self.num_atoms], name="value") if dueling else None

    def __call__(self, features: tf.Tensor) -> tf.Tensor:
        advantages = tf.reshape(self._advantage(features),
                                [-1, self.num_actions, self.num_atoms])
        if not self._dueling:
            return advantages
        value = self._value(features)[:, None, :]
        return value + advantages - tf.reduce_mean(advantages, axis=1, keepdims=True)

    def q_values(self, logits: tf.Tensor) -> tf.Tensor:
        """The mean of each action's distribution: sum_j softmax(logits)[..., j] z_j."""
        return tf.reduce_sum(tf.nn.softmax(logits, axis=-1) * self.atoms, axis=-1)
