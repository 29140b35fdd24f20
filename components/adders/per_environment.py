"""K single-environment adders behind the batched adder contract.

An agent whose replay items come from one environment each (R2D2's
overlapping sequences, a recurrent IMPALA's unrolls) still gives the actor one
adder for its group of K lock-stepped environments: this one, which hands row
i of each batched step to adder i. Actors then know one adder contract only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import dm_env
import numpy as np
import tree

from components.adders.base import Adder, BatchedAdder
from components.adders.nstep import stack_transitions


def slot_timestep(timestep: dm_env.TimeStep, i: int) -> dm_env.TimeStep:
    """Environment i's timestep out of a batched one."""
    step_type = dm_env.StepType(int(timestep.step_type[i]))
    first = step_type == dm_env.StepType.FIRST
    return dm_env.TimeStep(
        step_type=step_type,
        reward=None if first else timestep.reward[i],
        discount=None if first else timestep.discount[i],
        observation=tree.map_structure(lambda x: x[i], timestep.observation),
    )


class PerEnvironmentAdders(BatchedAdder):
    """Routes environment i's stream (its timestep, action and extras rows) to `adders[i]`.

    Adders that defer their items (`defer_items=True`) are served together: `pending()`
    stacks every adder's waiting items, and `write_pending(priorities)` gives each adder
    its share, in the same order, so the actor computes all priorities in one call.
    """

    def __init__(self, adders: Sequence[Adder]):
        if not adders:
            raise ValueError("PerEnvironmentAdders needs at least one adder")
        self.adders = list(adders)
        self.num_envs = len(self.adders)
        self._pending_counts: list[int] = []

    @property
    def items_written(self) -> int:
        return sum(getattr(adder, "items_written", 0) for adder in self.adders)

    def add_first(self, timestep: dm_env.TimeStep) -> None:
        for i, adder in enumerate(self.adders):
            adder.add_first(slot_timestep(timestep, i))

    def add(self, actions: Any, next_timestep: dm_env.TimeStep, extras: Any = ()) -> None:
        has_extras = bool(tree.flatten(extras))
        for i, adder in enumerate(self.adders):
            timestep = slot_timestep(next_timestep, i)
            if timestep.first():  # This environment's episode ended and restarted.
                adder.add_first(timestep)
            elif has_extras:
                adder.add(actions[i], timestep, tree.map_structure(lambda x, i=i: x[i], extras))
            else:
                adder.add(actions[i], timestep)

    def pending(self) -> Any:
        items = [adder.pending() if hasattr(adder, "pending") else [] for adder in self.adders]
        self._pending_counts = [len(group) for group in items]
        flat = [item for group in items for item in group]
        return stack_transitions(flat) if flat else None

    def write_pending(self, priorities: Any = None) -> None:
        """Gives each adder its share of `priorities` (in `pending()`'s order); None lets each
        adder choose its own (its priority function, or 1)."""
        counts, self._pending_counts = self._pending_counts, []
        if priorities is None:
            for adder in self.adders:
                if hasattr(adder, "write_pending"):
                    adder.write_pending()
            return
        priorities = np.asarray(priorities).reshape(-1)
        if len(priorities) != sum(counts):
            raise ValueError(f"{sum(counts)} items pending, got {len(priorities)} priorities")
        start = 0
        for adder, count in zip(self.adders, counts):
            if count:
                adder.write_pending(priorities[start:start + count])
                start += count

    def reset(self) -> None:
        for adder in self.adders:
            adder.reset()

    def close(self) -> None:
        for adder in self.adders:
            adder.close()
