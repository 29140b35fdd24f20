"""Adders: turn an actor's stream of timesteps into replay items."""

from components.adders.base import Adder, BatchedAdder
from components.adders.batched_nstep import BatchedNStepTransitionAdder
from components.adders.frames_once import (
    FramesOnceItem,
    FramesOnceNStepAdder,
    check_frame_stack_spec,
    frames_once_signature,
)
from components.adders.nstep import NStepTransitionAdder, nstep_return
from components.adders.per_environment import PerEnvironmentAdders, slot_timestep
from components.adders.rollout import BatchedRolloutAdder, rollout_signature
from components.adders.sequence import SequenceAdder, sequence_signature
from components.adders.unroll import UnrollAdder, unroll_signature

__all__ = ["Adder", "BatchedAdder", "BatchedNStepTransitionAdder", "BatchedRolloutAdder",
           "FramesOnceItem", "FramesOnceNStepAdder", "NStepTransitionAdder",
           "PerEnvironmentAdders", "SequenceAdder", "UnrollAdder", "check_frame_stack_spec",
           "frames_once_signature", "nstep_return", "rollout_signature", "sequence_signature",
           "slot_timestep", "unroll_signature"]
