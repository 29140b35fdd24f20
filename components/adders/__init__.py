"""Adders: turn an actor's stream of timesteps into replay items."""

from components.adders.base import Adder
from components.adders.nstep import NStepTransitionAdder, nstep_return
from components.adders.sequence import SequenceAdder, sequence_signature
from components.adders.unroll import UnrollAdder, unroll_signature

__all__ = ["Adder", "NStepTransitionAdder", "SequenceAdder", "UnrollAdder", "nstep_return",
           "sequence_signature", "unroll_signature"]
