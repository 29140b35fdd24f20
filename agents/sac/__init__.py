"""SAC: soft actor-critic with twin critics and a tuned temperature (continuous actions)."""

from agents.sac.builder import SACBuilder
from agents.sac.config import SACConfig

__all__ = ["SACBuilder", "SACConfig"]
