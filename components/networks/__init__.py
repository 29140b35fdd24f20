"""Sonnet networks: torsos (MLP, Nature Atari) and heads (dueling, policy-value)."""

from components.networks.atari import AtariTorso
from components.networks.dueling import DuelingHead
from components.networks.mlp import MLPTorso
from components.networks.policy_value import PolicyValueHead
from components.networks.recurrent import RecurrentPolicyValue
from components.networks.torso import make_torso

__all__ = ["AtariTorso", "DuelingHead", "MLPTorso", "PolicyValueHead", "RecurrentPolicyValue",
           "make_torso"]
