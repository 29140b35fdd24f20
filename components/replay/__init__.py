"""Replay: Reverb table factories, signatures and the replay server node."""

from components.replay.config import NStepReplayConfig
from components.replay.server import ReplayServer, pick_free_port, port_in_use
from components.replay.tables import (
    make_queue_table,
    make_rate_limiter,
    make_replay_table,
    transition_signature,
)
from components.replay.transitions import NStepTransitionReplay

__all__ = ["NStepReplayConfig", "NStepTransitionReplay", "ReplayServer", "make_queue_table",
           "make_rate_limiter", "make_replay_table", "pick_free_port", "port_in_use",
           "transition_signature"]
