"""n-step transitions of K environments stepped in lock-step, through one Reverb writer.

The items are those of `NStepTransitionAdder` (same formula, same episode
ends; see its docstring), for each of K environments whose timesteps come
batched (a leading K axis, as `BatchedEnvironment` returns them; a slot whose
episode ended restarts with a FIRST timestep).

Why a second adder: with small observations (CartPole) the per-environment
adder's Python, not the network or the simulator, bounds a batched actor,
and in a threaded program that Python competes with the learner for the GIL.
Per environment step this adder makes one call into Reverb's C++ trajectory
writer and one item-creation call, with column order fixed up front:

- one writer serves all K environments (its cells are referenced by
  reference, so items need not be contiguous), so there is one flush per
  batched step and no per-episode round trip (`end_episode` waits for the
  server; this adder never calls it);
- each environment-step appends (o_{t+1}, a_t) and, when the item starting
  at t+1-n completes, its (R, D); items then reference o_t and a_t of their
  start, (R, D) and o_{t+n} of their end;
- n-step returns of the K environments are computed together in numpy.

It calls the C++ writer behind `reverb.TrajectoryWriter` directly (its
`_writer`: `Append`, `CreateItem`, `Flush`), skipping the Python wrapper's
structure checks on every call; dm-reverb is pinned to 0.14.0, and the tests
compare this adder's items with the per-environment adder's, field by field.
"""

from __future__ import annotations

import collections
from typing import Any

import dm_env
import numpy as np
import reverb
import tree

from agentkit.types import Transition
from components.adders.base import BatchedAdder
from components.adders.nstep import PriorityFn, check_nstep_arguments, nstep_return

_FIRST = int(dm_env.StepType.FIRST)
_LAST = int(dm_env.StepType.LAST)


class BatchedNStepTransitionAdder(BatchedAdder):
    """Writes the n-step transitions of K environments, each with an initial priority.

    With `defer_items=True` the items of a step wait in `pending()` until
    `write_pending(priorities)` (the batched actor computes all priorities in
    one network call); otherwise they are written at once with priorities
    from `priority_fn` (1.0 without it).
    """

    def __init__(
        self,
        client: reverb.Client,
        table: str,
        num_envs: int,
        n_step: int,
        discount: float,
        priority_fn: PriorityFn | None = None,
        max_in_flight_items: int = 4,
        defer_items: bool = False,
    ):
        if num_envs < 1:
            raise ValueError(f"num_envs must be >= 1, got {num_envs}")
        check_nstep_arguments(n_step, discount)
        self.num_envs = num_envs
        self._table = table
        self._n = n_step
        self._gamma = discount
        self._priority_fn = priority_fn
        self._max_in_flight = max_in_flight_items
        self._defer = defer_items
        # A cell must outlive the items that reference it: an item's oldest cell
        # is at most n + 1 batched steps old, K cells per column per step, plus
        # the (R, D) cells of episode ends.
        self._writer = client.trajectory_writer(
            num_keep_alive_refs=num_envs * (2 * n_step + 2) + 8)
        self._cpp = self._writer._writer  # noqa: SLF001  (see the module docstring)
        self._leaves = 0  # Observation leaves: columns 0..L-1; then action, reward, discount.
        self._structure: Any = None
        self._nested = False
        # Per environment: (observation refs, action ref, observation, action) of
        # the steps not yet the start of an item, oldest first; the latest
        # observation's refs and value.
        self._starts = [collections.deque() for _ in range(num_envs)]
        self._last_refs: list[Any] = [None] * num_envs
        self._last_obs: list[Any] = [None] * num_envs
        # The last n rewards and discounts of each environment, oldest first.
        self._rewards = np.zeros((num_envs, n_step))
        self._discounts = np.ones((num_envs, n_step))
        self._powers = discount ** np.arange(n_step)
        self._pending_columns: list[list] = []  # Per pending item: its flat columns of refs.
        self._pending_values: list[tuple] = []  # Per pending item: (o_t, a_t, R, D, o_{t+m}).
        self.items_written = 0

    # -- episodes ---------------------------------------------------------

    def add_first(self, timestep: dm_env.TimeStep) -> None:
        step_type = np.asarray(timestep.step_type)
        if not (step_type == _FIRST).all():
            raise ValueError(f"add_first needs FIRST timesteps in every slot, got {step_type}")
        leaves = self._flatten(timestep.observation)
        for i in range(self.num_envs):
            self._start_episode(i, [leaf[i] for leaf in leaves])
        self._write_if_not_deferred()

    def add(self, actions: Any, next_timestep: dm_env.TimeStep, extras: Any = ()) -> None:
        del extras  # Transitions carry no extras.
        step_type = np.asarray(next_timestep.step_type)
        leaves = self._flatten(next_timestep.observation)
        # Roll every environment's window; a FIRST slot's entry is never read
        # (its new episode fills the window before any item uses it).
        self._rewards[:, :-1] = self._rewards[:, 1:]
        self._rewards[:, -1] = next_timestep.reward
        self._discounts[:, :-1] = self._discounts[:, 1:]
        self._discounts[:, -1] = next_timestep.discount
        returns, bootstrap = self._full_window_returns()
        n = self._n
        for i in range(self.num_envs):
            observation = [leaf[i] for leaf in leaves]
            if step_type[i] == _FIRST:
                if self._starts[i]:  # Cut short by a reset: written as at a truncation.
                    self._finish_episode(i, window_end=self._n - 1)  # Skip the FIRST's entry.
                self._start_episode(i, observation)
                continue
            if self._last_refs[i] is None:
                raise ValueError(f"environment {i}: add called before add_first")
            starts = self._starts[i]
            action = np.asarray(actions[i])
            completes = len(starts) + 1 == n
            flat = [*observation, action, None, None]
            if completes:
                r, d = np.float32(returns[i]), np.float32(bootstrap[i])
                flat[-2:] = r, d
            refs = self._cpp.Append(flat)
            starts.append((self._last_refs[i], refs[self._leaves], self._last_obs[i], action))
            new_refs = refs[:self._leaves]
            self._last_refs[i], self._last_obs[i] = new_refs, observation
            if completes:
                o_refs, a_ref, o_value, a_value = starts.popleft()
                self._queue(o_refs, a_ref, refs[-2], refs[-1], new_refs,
                            (o_value, a_value, r, d, observation))
            if step_type[i] == _LAST:
                self._finish_episode(i)
        self._write_if_not_deferred()

    def _full_window_returns(self) -> tuple[np.ndarray, np.ndarray]:
        """R and D of an item whose n rewards fill each environment's window."""
        factors = np.ones((self.num_envs, self._n))
        if self._n > 1:
            factors[:, 1:] = np.cumprod(self._discounts[:, :-1], axis=1)
        returns = (factors * self._powers * self._rewards).sum(axis=1)
        bootstrap = self._gamma ** self._n * np.prod(self._discounts, axis=1)
        return returns, bootstrap

    def _start_episode(self, i: int, observation: list) -> None:
        refs = self._cpp.Append([*observation, None, None, None])
        self._last_refs[i], self._last_obs[i] = refs[:self._leaves], observation
        self._starts[i].clear()

    def _finish_episode(self, i: int, window_end: int | None = None) -> None:
        """Writes environment i's transitions shorter than n, each with a step for its (R, D).

        The oldest pending start has m = len(starts) rewards after it: the
        window's last m entries before `window_end`.
        """
        starts = self._starts[i]
        end = self._n if window_end is None else window_end
        none = [None] * (self._leaves + 1)
        while starts:
            m = len(starts)
            r, d = nstep_return(self._rewards[i, end - m:end], self._discounts[i, end - m:end],
                                self._gamma)
            r, d = np.float32(r), np.float32(d)
            refs = self._cpp.Append([*none, r, d])
            o_refs, a_ref, o_value, a_value = starts.popleft()
            self._queue(o_refs, a_ref, refs[-2], refs[-1], self._last_refs[i],
                        (o_value, a_value, r, d, self._last_obs[i]))

    def _queue(self, o_refs, a_ref, r_ref, d_ref, next_refs, values: tuple) -> None:
        self._pending_columns.append([*([ref] for ref in o_refs), [a_ref], [r_ref], [d_ref],
                                      *([ref] for ref in next_refs)])
        self._pending_values.append(values)

    # -- items ------------------------------------------------------------

    def pending(self) -> Transition | None:
        """The transitions waiting for a priority, stacked (oldest first); None if none."""
        if not self._pending_values:
            return None
        o_t, a_t, r_t, d_t, o_tp = zip(*self._pending_values)
        return Transition(
            observation=self._unflatten([np.stack(x) for x in zip(*o_t)]),
            action=np.stack(a_t),
            reward=np.asarray(r_t, np.float32),
            discount=np.asarray(d_t, np.float32),
            next_observation=self._unflatten([np.stack(x) for x in zip(*o_tp)]),
        )

    def write_pending(self, priorities: np.ndarray | None = None) -> None:
        """Creates the pending items with `priorities` (default: from priority_fn, or 1); flushes."""
        count = len(self._pending_columns)
        if count:
            if priorities is None:
                priorities = np.ones(count)
                if self._priority_fn is not None:
                    priorities = self._priority_fn(self.pending())
            priorities = np.asarray(priorities, np.float64).reshape(-1)
            if len(priorities) != count:
                raise ValueError(f"{count} items pending, got {len(priorities)} priorities")
            squeeze = [True] * len(self._pending_columns[0])
            for columns, priority in zip(self._pending_columns, priorities.tolist()):
                self._cpp.CreateItem(self._table, priority, columns, squeeze)
            self.items_written += count
            self._pending_columns.clear()
            self._pending_values.clear()
        self._cpp.Flush(self._max_in_flight, -1)

    def _write_if_not_deferred(self) -> None:
        if not self._defer:
            self.write_pending()

    def reset(self) -> None:
        """Ends every environment's episode early, as at a truncation: nothing is dropped."""
        for i in range(self.num_envs):
            if self._starts[i]:
                self._finish_episode(i)
            self._last_refs[i] = self._last_obs[i] = None
        self.write_pending()

    def close(self) -> None:
        """Writes what unfinished episodes hold, waits for the server, releases the writer."""
        self.reset()
        self._cpp.Flush(0, -1)
        self._writer.close()

    # -- structure --------------------------------------------------------

    def _flatten(self, observation: Any) -> list:
        if self._structure is None:
            self._structure = tree.map_structure(lambda _: None, observation)
            self._nested = tree.is_nested(observation)
            self._leaves = len(tree.flatten(self._structure))
        return tree.flatten(observation) if self._nested else [observation]

    def _unflatten(self, leaves: list) -> Any:
        return tree.unflatten_as(self._structure, leaves) if self._nested else leaves[0]
