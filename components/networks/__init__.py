"""Sonnet networks: torsos (MLP, Nature Atari) and heads (linear, dueling)."""

from components.networks.atari import AtariTorso
from components.networks.dueling import DuelingHead
from components.networks.mlp import MLPTorso

__all__ = ["AtariTorso", "DuelingHead", "MLPTorso"]
