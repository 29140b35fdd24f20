"""IMPALA's network: a torso chosen from the observation spec and a policy-value head."""

from __future__ import annotations

import sonnet as snt
import tensorflow as tf
import tree

from agentkit.specs import EnvironmentSpec, num_discrete_actions
from agents.impala.config import IMPALAConfig
from components.networks import PolicyValueHead, RecurrentPolicyValue, make_torso


class SeparatePolicyValue(snt.Module):
    """Policy and value on torsos of their own: the value loss's large, noisy
    gradients (returns of ~100 on CartPole) cannot disturb the policy's features."""

    def __init__(self, spec: EnvironmentSpec, config: IMPALAConfig):
        super().__init__(name="separate_policy_value")
        head_hidden = [config.head_hidden_size] if config.head_hidden_size else []
        self._policy = snt.Sequential([
            make_torso(spec, config.torso, config.hidden_sizes),
            snt.nets.MLP(head_hidden + [num_discrete_actions(spec)]),
        ])
        self._value = snt.Sequential([
            make_torso(spec, config.torso, config.hidden_sizes),
            snt.nets.MLP(head_hidden + [1]),
        ])

    def __call__(self, observation):
        return self._policy(observation), tf.squeeze(self._value(observation), axis=-1)

    @property
    def value_variables(self):
        return self._value.trainable_variables


def make_policy_value_network(spec: EnvironmentSpec, config: IMPALAConfig) -> snt.Module:
    """observation -> (logits [B, A], value [B]); variables created with a dummy batch."""
    head_hidden = [config.head_hidden_size] if config.head_hidden_size else []
    if config.lstm_size:
        network = RecurrentPolicyValue(make_torso(spec, config.torso, config.hidden_sizes),
                                       config.lstm_size, num_discrete_actions(spec), head_hidden)
        dummy = tree.map_structure(lambda s: tf.zeros((1,) + tuple(s.shape), s.dtype),
                                   spec.observations)
        network(dummy, network.initial_state(1))
        return network
    if config.shared_torso:
        network = snt.Sequential([
            make_torso(spec, config.torso, config.hidden_sizes),
            PolicyValueHead(num_discrete_actions(spec), head_hidden),
        ])
    else:
        network = SeparatePolicyValue(spec, config)
    dummy = tree.map_structure(lambda s: tf.zeros((1,) + tuple(s.shape), s.dtype),
                               spec.observations)
    network(dummy)
    return network


def make_networks(spec: EnvironmentSpec, config: IMPALAConfig) -> dict[str, snt.Module]:
    return {"policy": make_policy_value_network(spec, config)}
