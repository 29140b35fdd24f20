"""A policy-value head for discrete actions (IMPALA, actor-critics)."""

from __future__ import annotations

from collections.abc import Sequence

import sonnet as snt
import tensorflow as tf

from components.networks.initializers import POLICY_GAIN, VALUE_GAIN, hidden_init, output_init


class PolicyValueHead(snt.Module):
    """Maps features to (policy logits [B, A], state value [B]) through a shared MLP."""

    def __init__(self, num_actions: int, hidden_sizes: Sequence[int] = (),
                 init: str = "default", name: str = "policy_value"):
        super().__init__(name=name)
        self._hidden = (snt.nets.MLP(list(hidden_sizes), activate_final=True,
                                     w_init=hidden_init(init)) if hidden_sizes else None)
        self._policy = snt.Linear(num_actions, w_init=output_init(init, POLICY_GAIN),
                                  name="policy")
        self._value = snt.Linear(1, w_init=output_init(init, VALUE_GAIN), name="value")

    def __call__(self, inputs: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        features = self._hidden(inputs) if self._hidden is not None else inputs
        return self._policy(features), tf.squeeze(self._value(features), axis=-1)
