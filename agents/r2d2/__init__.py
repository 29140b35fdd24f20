"""R2D2: recurrent replay distributed DQN (stored state, burn-in, value rescaling)."""

from agents.r2d2.builder import R2D2Builder
from agents.r2d2.config import R2D2Config

__all__ = ["R2D2Builder", "R2D2Config"]
