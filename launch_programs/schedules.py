"""Behaviour-policy schedules across restarts: an epsilon decay goes on where the run was."""

from __future__ import annotations

from typing import Any


def resume_schedule(policy: Any, counter: Any, share: int = 1) -> None:
    """Moves a policy with a schedule (`start_at`, DQN's epsilon) to `1/share` of the actor
    steps the run's counter holds: a resumed run, or a rebuilt node, goes on from there
    rather than from the schedule's start. Nothing to do for a policy without one."""
    start_at = getattr(policy, "start_at", None)
    if start_at is None or counter is None:
        return
    before = int(counter.get_counts().get("actor_steps", 0))
    if before:
        start_at(before // share)
