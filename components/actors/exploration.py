"""Exploration schedules shared by value-based agents (DQN, R2D2, Rainbow)."""

from __future__ import annotations


def apex_epsilon(actor_id: int, num_actors: int, base: float = 0.4, alpha: float = 7.0) -> float:
    """Ape-X's fixed exploration of actor i of N: base ** (1 + alpha * i / (N - 1))."""
    if num_actors <= 1:
        return base
    return base ** (1.0 + alpha * actor_id / (num_actors - 1))
