"""Policy-value networks for discrete actions, chosen from a few fields (IMPALA, APPO, PPO).

    separate (default)  policy: torso -> MLP -> logits;  value: torso -> MLP -> V
    shared_torso        torso -> PolicyValueHead (logits, V)
    lstm_size > 0       torso -> LSTM -> PolicyValueHead (a recurrent policy)

Every network maps observation -> (logits [B, A], value [B]); a recurrent one
also takes and returns its core state.
"""

from __future__ import annotations

from collections.abc import Sequence

import sonnet as snt
import tensorflow as tf
import tree

from agentkit.config import ConfigError
from agentkit.specs import EnvironmentSpec, num_discrete_actions
from components.networks.initializers import POLICY_GAIN, VALUE_GAIN, hidden_init, output_init
from components.networks.normalizer import RunningMeanStd
from components.networks.policy_value import PolicyValueHead
from components.networks.recurrent import RecurrentPolicyValue
from components.networks.torso import make_torso


class SeparatePolicyValue(snt.Module):
    """Policy and value on torsos of their own: the value loss's large, noisy
    gradients (returns of ~100 on CartPole) cannot disturb the policy's features.
    With `init="orthogonal"` each output layer has its own gain (logits 0.01, value 1),
    as stable-baselines3's separate actor-critic MLPs have."""

    def __init__(self, spec: EnvironmentSpec, torso: str, hidden_sizes: Sequence[int],
                 head_hidden_size: int = 0, compute_dtype: str = "float32",
                 init: str = "default", activation: str = "relu",
                 normalized_inputs: bool = False):
        super().__init__(name="separate_policy_value")

        def branch(size: int, gain: float) -> snt.Sequential:
            layers = [make_torso(spec, torso, hidden_sizes, compute_dtype, init, activation,
                                 normalized_inputs)]
            if head_hidden_size:
                layers.append(snt.nets.MLP([head_hidden_size], activate_final=True,
                                           w_init=hidden_init(init)))
            return snt.Sequential(layers + [snt.Linear(size, w_init=output_init(init, gain))])

        self._policy = branch(num_discrete_actions(spec), POLICY_GAIN)
        self._value = branch(1, VALUE_GAIN)

    def __call__(self, observation):
        return self._policy(observation), tf.squeeze(self._value(observation), axis=-1)

    def policy_logits(self, observation) -> tf.Tensor:
        """The logits alone: acting needs no value, and its torso is half the work."""
        return self._policy(observation)

    @property
    def value_variables(self):
        """The value torso's and head's variables (a learner may give them their own rate)."""
        return self._value.trainable_variables


def make_policy_value_network(spec: EnvironmentSpec, *, torso: str, hidden_sizes: Sequence[int],
                              head_hidden_size: int = 0, shared_torso: bool = False,
                              lstm_size: int = 0, compute_dtype: str = "float32",
                              init: str = "default", activation: str = "relu",
                              normalize_observations: bool = False) -> snt.Module:
    """observation -> (logits [B, A], value [B]); variables created with a dummy batch.
    `compute_dtype` is the Nature CNN's (`components.networks.atari.AtariTorso`); `init`
    the weights' scheme (`components.networks.initializers`); `activation` the MLP torso's
    nonlinearity. `normalize_observations`: the observations pass a RunningMeanStd first
    (its statistics are the network's variables; the learner updates them)."""
    if normalize_observations and lstm_size:
        raise ConfigError("--normalize_observations: not with a recurrent core (--lstm_size)")
    head_hidden = [head_hidden_size] if head_hidden_size else []
    dummy = tree.map_structure(lambda s: tf.zeros((1,) + tuple(s.shape), s.dtype),
                               spec.observations)
    if lstm_size or shared_torso:
        shared = make_torso(spec, torso, hidden_sizes, compute_dtype, init, activation,
                            normalize_observations)
    if lstm_size:
        network = RecurrentPolicyValue(shared, lstm_size, num_discrete_actions(spec), head_hidden,
                                       init)
        network(dummy, network.initial_state(1))
        return network
    if shared_torso:
        network = snt.Sequential([shared,
                                  PolicyValueHead(num_discrete_actions(spec), head_hidden, init)])
    else:
        network = SeparatePolicyValue(spec, torso, hidden_sizes, head_hidden_size, compute_dtype,
                                      init, activation, normalize_observations)
    if normalize_observations:
        network = snt.Sequential([RunningMeanStd(), network], name="normalized_policy_value")
    network(dummy)
    return network
