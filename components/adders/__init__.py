"""Adders: turn an actor's stream of timesteps into replay items."""

from components.adders.base import Adder
from components.adders.nstep import NStepTransitionAdder, nstep_return
from components.adders.unroll import UnrollAdder, unroll_signature

__all__ = ["Adder", "NStepTransitionAdder", "UnrollAdder", "nstep_return", "unroll_signature"]
