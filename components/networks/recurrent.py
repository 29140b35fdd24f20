"""Recurrent networks: torso -> LSTM core -> head, stepped by actors, unrolled by learners.

One step (`__call__`) serves acting; `unroll` replays a whole sequence from
the core state an actor stored at its first step (the stored-state strategy
of R2D2, also IMPALA's recurrent learner), so the learner sees the states the
actor had. The head decides what comes out: Q-values (dueling or linear) or
policy logits and a value.
"""

from __future__ import annotations

import sonnet as snt
import tensorflow as tf
import tree

from components.networks.dueling import DuelingHead
from components.networks.policy_value import PolicyValueHead

LSTMState = tuple  # (hidden [B, H], cell [B, H])


class RecurrentNetwork(snt.Module):
    """(observation, state) -> (head outputs, new state), with an LSTM of `core_size`."""

    def __init__(self, torso: snt.Module, core_size: int, head: snt.Module,
                 name: str = "recurrent_network"):
        super().__init__(name=name)
        self._torso = torso
        self._core = snt.LSTM(core_size)
        self._head = head
        self.core_size = core_size

    def initial_state(self, batch_size) -> LSTMState:
        zeros = tf.zeros([batch_size, self.core_size], tf.float32)
        return (zeros, zeros)

    def __call__(self, observation, state: LSTMState):
        features, new_state = self._core(self._torso(observation),
                                         snt.LSTMState(hidden=state[0], cell=state[1]))
        return self._head(features), (new_state.hidden, new_state.cell)

    def unroll_core(self, observations, state: LSTMState):
        """observations [T, B, ...] from `state` -> (core outputs [T, B, H], final state)."""
        steps, batch = tf.shape(observations)[0], tf.shape(observations)[1]
        flat = tf.reshape(observations, tf.concat([[steps * batch], tf.shape(observations)[2:]], 0))
        features = self._torso(flat)
        features = tf.reshape(features, [steps, batch, features.shape[-1]])
        outputs, final = snt.dynamic_unroll(
            self._core, features, snt.LSTMState(hidden=state[0], cell=state[1]))
        return outputs, (final.hidden, final.cell)

    def apply_head(self, core_outputs):
        """The head on core outputs [T, B, H] -> its outputs, each [T, B, ...]."""
        steps, batch = tf.shape(core_outputs)[0], tf.shape(core_outputs)[1]
        outputs = self._head(tf.reshape(core_outputs, [steps * batch, self.core_size]))

        def unflatten(x):
            return tf.reshape(x, tf.concat([[steps, batch], tf.shape(x)[1:]], 0))

        return tree.map_structure(unflatten, outputs)

    def unroll(self, observations, state: LSTMState):
        """observations [T, B, ...] from `state` -> head outputs, each [T, B, ...]."""
        outputs, _ = self.unroll_core(observations, state)
        return self.apply_head(outputs)


class RecurrentPolicyValue(RecurrentNetwork):
    """(observation, state) -> ((logits [B, A], value [B]), new state)."""

    def __init__(self, torso: snt.Module, core_size: int, num_actions: int,
                 head_hidden_sizes=(), init: str = "default",
                 name: str = "recurrent_policy_value"):
        super().__init__(torso, core_size, PolicyValueHead(num_actions, head_hidden_sizes, init),
                         name=name)


class RecurrentQNetwork(RecurrentNetwork):
    """(observation, state) -> (Q-values [B, A], new state); dueling or linear head."""

    def __init__(self, torso: snt.Module, core_size: int, num_actions: int, dueling: bool = True,
                 head_hidden_sizes=(), name: str = "recurrent_q_network"):
        if dueling:
            head = DuelingHead(num_actions, head_hidden_sizes)
        else:
            head = snt.nets.MLP(list(head_hidden_sizes) + [num_actions])
        super().__init__(torso, core_size, head, name=name)
