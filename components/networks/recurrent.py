"""A recurrent policy-value network: torso -> LSTM core -> policy-value head.

One step (`__call__`) serves acting; `unroll` replays a whole unroll from
the core state an actor stored at its first step, so the learner sees the
same states the actor had.
"""

from __future__ import annotations

import sonnet as snt
import tensorflow as tf

from components.networks.policy_value import PolicyValueHead

LSTMState = tuple  # (hidden [B, H], cell [B, H])


class RecurrentPolicyValue(snt.Module):
    """(observation, state) -> ((logits [B, A], value [B]), new state)."""

    def __init__(self, torso: snt.Module, core_size: int, num_actions: int,
                 head_hidden_sizes=(), name: str = "recurrent_policy_value"):
        super().__init__(name=name)
        self._torso = torso
        self._core = snt.LSTM(core_size)
        self._head = PolicyValueHead(num_actions, head_hidden_sizes)
        self.core_size = core_size

    def initial_state(self, batch_size) -> LSTMState:
        zeros = tf.zeros([batch_size, self.core_size], tf.float32)
        return (zeros, zeros)

    def __call__(self, observation, state: LSTMState):
        features, new_state = self._core(self._torso(observation),
                                         snt.LSTMState(hidden=state[0], cell=state[1]))
        return self._head(features), (new_state.hidden, new_state.cell)

    def unroll(self, observations, state: LSTMState):
        """observations [T, B, ...] from `state` -> (logits [T, B, A], values [T, B])."""
        steps, batch = tf.shape(observations)[0], tf.shape(observations)[1]
        flat = tf.reshape(observations, tf.concat([[steps * batch], tf.shape(observations)[2:]], 0))
        features = self._torso(flat)
        features = tf.reshape(features, [steps, batch, features.shape[-1]])
        outputs, _ = snt.dynamic_unroll(
            self._core, features, snt.LSTMState(hidden=state[0], cell=state[1]))
        flat_outputs = tf.reshape(outputs, [steps * batch, self.core_size])
        logits, values = self._head(flat_outputs)
        return (tf.reshape(logits, [steps, batch, -1]), tf.reshape(values, [steps, batch]))
