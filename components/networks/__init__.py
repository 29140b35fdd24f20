"""Sonnet networks: torsos, heads (dueling, categorical Q, policy-value, distributional), LSTM
cores, policies."""

from components.networks.actor_critic import SeparatePolicyValue, make_policy_value_network
from components.networks.atari import AtariTorso
from components.networks.categorical_q import CategoricalQHead
from components.networks.deterministic_policy import DeterministicPolicy
from components.networks.distributional import DistributionalCritic
from components.networks.dueling import DuelingHead
from components.networks.layer_norm_mlp import LayerNormMLP
from components.networks.minatar import MinAtarTorso
from components.networks.mlp import MLPTorso
from components.networks.noisy import NoisyLinear, NoisyMLP, set_noise
from components.networks.policy_value import PolicyValueHead
from components.networks.recurrent import RecurrentNetwork, RecurrentPolicyValue, RecurrentQNetwork
from components.networks.stochastic_policy import TanhGaussianPolicy, TwinCritic, squashed_log_prob
from components.networks.torso import make_torso

__all__ = ["AtariTorso", "CategoricalQHead", "DeterministicPolicy", "DistributionalCritic",
           "DuelingHead", "LayerNormMLP",
           "MinAtarTorso", "MLPTorso", "NoisyLinear", "NoisyMLP",
           "PolicyValueHead", "RecurrentNetwork", "RecurrentPolicyValue", "RecurrentQNetwork",
           "SeparatePolicyValue", "TanhGaussianPolicy", "TwinCritic", "make_policy_value_network",
           "make_torso", "set_noise", "squashed_log_prob"]
