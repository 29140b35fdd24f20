"""Sonnet networks: torsos (MLP, Nature Atari), heads (dueling, policy-value), LSTM cores."""

from components.networks.atari import AtariTorso
from components.networks.dueling import DuelingHead
from components.networks.mlp import MLPTorso
from components.networks.policy_value import PolicyValueHead
from components.networks.recurrent import RecurrentNetwork, RecurrentPolicyValue, RecurrentQNetwork
from components.networks.torso import make_torso

__all__ = ["AtariTorso", "DuelingHead", "MLPTorso", "PolicyValueHead", "RecurrentNetwork",
           "RecurrentPolicyValue", "RecurrentQNetwork", "make_torso"]
