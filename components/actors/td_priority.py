"""Ape-X's actor-side priorities: the actor's own network judges the items it writes."""

from __future__ import annotations

import numpy as np
import sonnet as snt
import tensorflow as tf
import tree

from agentkit.specs import EnvironmentSpec
from components.actors.epsilon_greedy import EpsilonGreedyPolicy
from components.compiled import CompiledFunction, batched_signature


class TDPriority(tf.Module):
    """|R + D max_a Q(o', a) - Q(o, a)| of a batch of n-step transitions.

    The actor's own (online) network judges what it writes, as in Ape-X, so
    new transitions enter replay with a priority the learner would give them
    instead of a constant. One compiled call per actor step.
    """

    def __init__(self, network: snt.Module, spec: EnvironmentSpec,
                 policy: EpsilonGreedyPolicy | None = None):
        """With `policy` (on the same network), `with_actions` is available too."""
        super().__init__(name="td_priority")
        self._network = network
        self._policy = policy
        self._action_dtype = spec.actions.dtype
        observation = batched_signature(spec.observations)
        scalar = tf.TensorSpec((None,), tf.float32)
        action = tf.TensorSpec((None,), spec.actions.dtype)
        self._fn = CompiledFunction(
            self._priorities, input_signature=[observation, action, scalar, scalar, observation]
        )
        self._fused = CompiledFunction(
            self._priorities_and_actions,
            input_signature=[observation, action, scalar, scalar, observation, observation],
        )

    def _priorities(self, o_tm1, a_tm1, r_t, d_t, o_t):
        priorities, _ = self._forward(o_tm1, a_tm1, r_t, d_t, o_t)
        return priorities

    def _priorities_and_actions(self, o_tm1, a_tm1, r_t, d_t, o_t, observation):
        priorities, q_next = self._forward(o_tm1, a_tm1, r_t, d_t, o_t, observation)
        return priorities, self._policy.select_from_q_values(q_next)

    def _forward(self, o_tm1, a_tm1, r_t, d_t, o_t, *more):
        """|td| of the transitions and Q of any `more` observations, in one forward pass."""
        n = tf.shape(a_tm1)[0]
        inputs = tree.map_structure(lambda *xs: tf.concat(xs, axis=0), o_tm1, o_t, *more)
        q_all = self._network(inputs)
        q_tm1_all, q_t_all, q_more = q_all[:n], q_all[n:2 * n], q_all[2 * n:]
        q_tm1 = tf.gather(q_tm1_all, tf.cast(a_tm1, tf.int32), batch_dims=1)
        return tf.abs(r_t + d_t * tf.reduce_max(q_t_all, axis=-1) - q_tm1), q_more

    def _arguments(self, transitions) -> tuple:
        t = transitions
        return (t.observation, np.asarray(t.action, self._action_dtype),
                np.asarray(t.reward, np.float32), np.asarray(t.discount, np.float32),
                t.next_observation)

    def __call__(self, transitions) -> np.ndarray:
        return self._fn(*self._arguments(transitions)).numpy()

    def with_actions(self, transitions, observation) -> tuple[np.ndarray, np.ndarray]:
        """(priorities of `transitions`, the policy's actions for `observation`) in one call.

        Saves the batched actor its second compiled call per step: the
        observation it will act on next is in the same forward pass.
        """
        if self._policy is None:
            raise ValueError("with_actions needs the TDPriority to be made with a policy")
        priorities, actions = self._fused(*self._arguments(transitions), observation)
        return priorities.numpy(), actions.numpy()
