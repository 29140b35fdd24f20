"""Sonnet's Adam with one fused kernel per variable.

`snt.optimizers.Adam` builds about fifteen small ops per variable (moments,
bias corrections, the step); for a small network their per-op overhead is
most of an update. `FusedAdam` computes the same update with TensorFlow's
`ResourceApplyAdam`, one op per variable, over the same state variables
(`step`, `m`, `v`), so checkpoints of either load into the other.

Sonnet's rule, with bias-corrected moments,

    p -= lr * m_hat / (sqrt(v_hat) + eps),  m_hat = m / (1 - b1^t),  v_hat = v / (1 - b2^t)

equals the kernel's rule

    p -= lr_t * m / (sqrt(v) + eps_t),  lr_t = lr * sqrt(1 - b2^t) / (1 - b1^t),

when the kernel's epsilon is eps_t = eps * sqrt(1 - b2^t), which is what
`apply` passes. Measured on CartPole's MLP (256x256, batch 64, 2 cores):
0.45 instead of 0.56 ms per DQN learner step.
"""

from __future__ import annotations

from collections.abc import Sequence

import sonnet as snt
import tensorflow as tf


class FusedAdam(snt.optimizers.Adam):
    """`snt.optimizers.Adam`, one `ResourceApplyAdam` per dense float32 variable."""

    def apply(self, updates: Sequence[tf.Tensor | None], parameters: Sequence[tf.Variable]):
        if any(isinstance(u, tf.IndexedSlices) for u in updates) or any(
                p.dtype != tf.float32 for p in parameters):
            return super().apply(updates, parameters)  # Sparse or other dtypes: Sonnet's ops.
        if len(updates) != len(parameters) or not parameters:
            raise ValueError(f"apply needs as many updates as parameters (> 0), got "
                             f"{len(updates)} and {len(parameters)}")
        self._initialize(parameters)
        self.step.assign_add(1)
        t = tf.cast(self.step, tf.float32)
        beta1 = tf.constant(self.beta1, tf.float32)
        beta2 = tf.constant(self.beta2, tf.float32)
        beta1_power, beta2_power = beta1**t, beta2**t
        learning_rate = tf.cast(self.learning_rate, tf.float32)
        epsilon = tf.cast(self.epsilon, tf.float32) * tf.sqrt(1.0 - beta2_power)
        for update, parameter, m, v in zip(updates, parameters, self.m, self.v):
            if update is None:
                continue
            tf.raw_ops.ResourceApplyAdam(
                var=parameter.handle, m=m.handle, v=v.handle, beta1_power=beta1_power,
                beta2_power=beta2_power, lr=learning_rate, beta1=beta1, beta2=beta2,
                epsilon=epsilon, grad=update)
