"""The n-step transition adder (DQN, D4PG, Ape-X).

For the transition starting at step t with m = min(n, steps left in the
episode) following rewards r_{t+1..t+m} and environment discounts
d_{t+1..t+m}:

    R_t = sum_{k=0}^{m-1} gamma^k (prod_{j=1}^{k} d_{t+j}) r_{t+k+1}
    D_t = gamma^m prod_{j=1}^{m} d_{t+j}

and the item is (o_t, a_t, R_t, D_t, o_{t+m}). A termination (d = 0) makes
D_t = 0, so the learner does not bootstrap past it; a truncation (d = 1)
keeps bootstrapping from the last observation. At the end of an episode the
last min(n, length) - 1 transitions are shorter than n and written all the
same, so episodes shorter than n still produce one item per step.

Observations are written to the Reverb trajectory writer once per step and
shared by the items that reference them (o_{t+n} of one item is o_t of
another), so replay holds each observation about once, not twice.
"""

from __future__ import annotations

import collections
from collections.abc import Callable
from typing import Any

import dm_env
import numpy as np
import reverb

from agentkit.types import Transition
from components.adders.base import Adder

PriorityFn = Callable[[Transition], float]


def nstep_return(rewards, discounts, gamma: float) -> tuple[float, float]:
    """(R, D) of the formula above for one transition's m rewards and discounts."""
    total, factor = 0.0, 1.0
    for reward, discount in zip(rewards, discounts):
        total += factor * float(reward)
        factor *= gamma * float(discount)
    return total, factor


class NStepTransitionAdder(Adder):
    """Writes n-step transitions, each with an initial priority."""

    def __init__(
        self,
        client: reverb.Client,
        table: str,
        n_step: int,
        discount: float,
        priority_fn: PriorityFn | None = None,
        max_in_flight_items: int = 4,
    ):
        if n_step < 1:
            raise ValueError(f"n_step must be >= 1, got {n_step}")
        if not 0.0 <= discount <= 1.0:
            raise ValueError(f"discount must be in [0, 1], got {discount}")
        self._table = table
        self._n = n_step
        self._gamma = discount
        self._priority_fn = priority_fn
        self._max_in_flight = max_in_flight_items
        # Keep enough history alive for n+1 observations plus the tail steps.
        self._writer = client.trajectory_writer(num_keep_alive_refs=2 * n_step + 2)
        # Per episode: (observation, action) of steps not yet the start of an
        # item, and the rewards/discounts that followed each step.
        self._starts: collections.deque = collections.deque()
        self._rewards: collections.deque = collections.deque()
        self._discounts: collections.deque = collections.deque()
        self._steps = 0  # Writer steps in this episode, the open one included.
        self._observation_step = 0  # The step holding the latest observation.
        self._step_open = False
        self._open_step_has_returns = False
        self._last_observation: Any = None
        self.items_written = 0

    def add_first(self, timestep: dm_env.TimeStep) -> None:
        if not timestep.first():
            raise ValueError(f"add_first needs a FIRST timestep, got {timestep.step_type}")
        self.reset()
        self._append({"observation": timestep.observation}, partial=True)
        self._observation_step = 0
        self._last_observation = timestep.observation

    def add(self, action: Any, next_timestep: dm_env.TimeStep, extras: Any = ()) -> None:
        del extras  # Transitions carry no extras.
        if self._steps == 0:
            raise ValueError("add called before add_first")
        if next_timestep.first():
            raise ValueError("add got a FIRST timestep; use add_first")
        # Close step t with its action, open step t+1 with its observation.
        self._append({"action": np.asarray(action)}, partial=False)
        self._starts.append((self._steps - 1, self._last_observation, np.asarray(action)))
        self._append({"observation": next_timestep.observation}, partial=True)
        self._observation_step = self._steps - 1
        self._last_observation = next_timestep.observation
        self._rewards.append(float(next_timestep.reward))
        self._discounts.append(float(next_timestep.discount))

        if len(self._starts) == self._n:
            self._write_oldest(last=next_timestep.last())
        if next_timestep.last():
            self._finish_episode()

    def _finish_episode(self) -> None:
        """Writes the transitions shorter than n, then ends the episode."""
        while self._starts:
            self._write_oldest(last=True)
        self._writer.end_episode(clear_buffers=True)
        self._reset_episode()

    def _append(self, data: dict, partial: bool) -> None:
        self._writer.append(data, partial_step=partial)
        if not self._step_open:
            self._steps += 1
            self._open_step_has_returns = False
        self._open_step_has_returns |= "nstep_reward" in data
        self._step_open = partial

    def _write_oldest(self, last: bool) -> None:
        """Writes the item that starts at the oldest pending step."""
        start, observation, action = self._starts.popleft()
        reward, discount = nstep_return(self._rewards, self._discounts, self._gamma)
        self._rewards.popleft()
        self._discounts.popleft()
        returns = {"nstep_reward": np.float32(reward), "nstep_discount": np.float32(discount)}
        # In mid-episode the returns share the open step holding o_{t+m}, which
        # the next `add` closes with its action. At the episode's end the first
        # item closes that step, and each further one gets a step of its own
        # holding only its returns.
        if self._step_open and self._open_step_has_returns:
            self._append({}, partial=False)  # Only when an episode is cut short.
        self._append(returns, partial=self._step_open and not last)
        history = self._writer.history
        offset = self._steps  # Negative index of absolute step s: s - offset.
        trajectory = Transition(
            observation=history["observation"][start - offset],
            action=history["action"][start - offset],
            reward=history["nstep_reward"][-1],
            discount=history["nstep_discount"][-1],
            next_observation=history["observation"][self._observation_step - offset],
        )
        priority = 1.0
        if self._priority_fn is not None:
            priority = float(
                self._priority_fn(
                    Transition(observation, action, np.float32(reward), np.float32(discount),
                               self._last_observation)
                )
            )
        self._writer.create_item(self._table, priority, trajectory)
        self._writer.flush(self._max_in_flight)
        self.items_written += 1

    def reset(self) -> None:
        """Ends the current episode early.

        Its pending transitions are written as at a truncation (they
        bootstrap from the last observation): no experience is dropped.
        """
        if self._starts:
            self._finish_episode()
        elif self._step_open:
            self._writer.append({}, partial_step=False)  # Close the open step.
            self._writer.end_episode(clear_buffers=True)
        self._reset_episode()

    def _reset_episode(self) -> None:
        self._starts.clear()
        self._rewards.clear()
        self._discounts.clear()
        self._steps = 0
        self._step_open = False
        self._last_observation = None

    def close(self) -> None:
        """Writes the pending transitions of an unfinished episode, then flushes."""
        self.reset()
        self._writer.flush()
        self._writer.close()
