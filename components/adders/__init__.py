"""Adders: turn an actor's stream of timesteps into replay items."""

from components.adders.base import Adder
from components.adders.nstep import NStepTransitionAdder, nstep_return

__all__ = ["Adder", "NStepTransitionAdder", "nstep_return"]
