"""D4PG: distributed distributional deterministic policy gradients (continuous actions)."""

from agents.d4pg.builder import D4PGBuilder
from agents.d4pg.config import D4PGConfig

__all__ = ["D4PGBuilder", "D4PGConfig"]
