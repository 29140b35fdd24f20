"""n-step transitions of K environments stepped in lock-step, through one Reverb writer.

The items are those of `NStepTransitionAdder` (same formula, same episode
ends, same nests and extras; see its docstring), for each of K environments
whose timesteps come batched (a leading K axis on every leaf of every field,
extras included, as `BatchedEnvironment` returns them; a slot whose episode
ended restarts with a FIRST timestep).

Why a second adder: with small observations (CartPole) the per-environment
adder's Python, not the network or the simulator, bounds a batched actor,
and in a threaded program that Python competes with the learner for the GIL.
Per environment step this adder makes one call into Reverb's C++ trajectory
writer and one item-creation call, with column order fixed up front:

- one writer serves all K environments (its cells are referenced by
  reference, so items need not be contiguous), so there is one flush per
  batched step and no per-episode round trip (`end_episode` waits for the
  server; this adder never calls it);
- each environment-step appends (o_{t+1}, a_t, e_t) and, when the item
  starting at t+1-n completes, its (R, D); items then reference o_t, a_t and
  e_t of their start, (R, D) and o_{t+n} of their end;
- n-step returns of the K environments are computed together in numpy, one
  reward leaf at a time.

Columns, by leaf: observation, action, extras, R, D (R and D one per reward
leaf). It calls the C++ writer behind `reverb.TrajectoryWriter` directly (its
`_writer`: `Append`, `CreateItem`, `Flush`), skipping the Python wrapper's
structure checks on every call (its own checks are one structure comparison
per field and step); dm-reverb is pinned to 0.14.0, and the tests compare
this adder's items with the per-environment adder's, field by field.
"""

from __future__ import annotations

import collections
import itertools
from typing import Any

import dm_env
import numpy as np
import reverb
import tree

from agentkit.types import Transition
from components.adders.base import PENDING_ITEMS_LIMIT, BatchedAdder
from components.adders.nests import Field, RewardLayout, check_no_extras, extras_field
from components.adders.nstep import PriorityFn, check_nstep_arguments, nstep_return

_FIRST = int(dm_env.StepType.FIRST)
_LAST = int(dm_env.StepType.LAST)


def require_first(timestep: dm_env.TimeStep) -> None:
    """Raises unless every slot of a batched timestep is FIRST (what `add_first` takes)."""
    step_type = np.asarray(timestep.step_type)
    if not (step_type == _FIRST).all():
        raise ValueError(f"add_first needs FIRST timesteps in every slot, got {step_type}")


class BatchedNStepTransitionAdder(BatchedAdder):
    """Writes the n-step transitions of K environments, each with an initial priority.

    With `defer_items=True` the items of a step wait in `pending()` until
    `write_pending(priorities)` (the batched actor computes all priorities in
    one network call); otherwise they are written at once with priorities
    from `priority_fn` (1.0 without it). `extras_spec` is per environment
    (no K axis); the extras given to `add` have a leading K axis.
    """

    # Batched steps an item waits after its last cell before it is created (a subclass
    # holds items until the chunks they reference are complete).
    _hold_steps = 0

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
        extras_spec: Any = None,
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
        # the (R, D) cells of episode ends (and the steps items are held).
        self._writer = client.trajectory_writer(
            num_keep_alive_refs=num_envs * (2 * n_step + 2) * (1 + self._hold_steps) + 8)
        self._cpp = self._writer._writer  # noqa: SLF001  (see the module docstring)
        self._extras = extras_field(extras_spec, batch_shape=(num_envs,))
        # Fixed by the first add_first (observation) and add (the rest).
        self._observation: Field | None = None
        self._action: Field | None = None
        self._layout: RewardLayout | None = None
        self._none_tail: list = []  # None for every column after the observation's.
        self._no_returns: list = []  # None for every R and D column.
        self._num_before_returns = 0  # Observation, action and extras columns.
        # Per environment: (observation refs, action and extras refs, observation,
        # action, extras) of the steps not yet the start of an item, oldest first;
        # the latest observation's refs and value. Values are lists of leaves.
        self._starts = [collections.deque() for _ in range(num_envs)]
        self._last_refs: list[Any] = [None] * num_envs
        self._last_obs: list[Any] = [None] * num_envs
        # Per reward (discount) leaf: its last n values per environment, [K, n, *shape], oldest first.
        self._rewards: list[np.ndarray] = []
        self._discounts: list[np.ndarray] = []
        self._pending_columns: list[list] = []  # Per pending item: its flat columns of refs.
        self._pending_values: list[tuple] = []  # Per pending item: Transition fields, as leaves.
        self._held: collections.deque = collections.deque()  # (release step, columns, priority).
        self._squeeze: list[bool] = []  # Per item column: one cell (squeezed) or several.
        self._steps = 0  # Batched steps added.
        self._unconfirmed = 0  # At most this many items wait unconfirmed by the server.
        self.items_written = 0

    # -- episodes ---------------------------------------------------------

    def add_first(self, timestep: dm_env.TimeStep) -> None:
        require_first(timestep)
        if self._observation is None:
            self._observation = Field("observation", timestep.observation)
            self._observation.check_batch(self.num_envs)
        leaves = self._observation.flatten(timestep.observation)
        for i in range(self.num_envs):
            self._start_episode(i, [leaf[i] for leaf in leaves])
        self._write_if_not_deferred()

    def add(self, actions: Any, next_timestep: dm_env.TimeStep, extras: Any = ()) -> None:
        if self._observation is None:
            raise ValueError("add called before add_first")
        if self._layout is None:
            self._first_add(actions, next_timestep)
        step_type = np.asarray(next_timestep.step_type)
        leaves = self._observation.flatten(next_timestep.observation)
        action_leaves = [np.asarray(x) for x in self._action.flatten(
            np.asarray(actions) if isinstance(actions, list) else actions)]
        if self._extras is not None:
            extras_leaves = self._extras.flatten(extras)
        else:
            check_no_extras(extras)
            extras_leaves = []
        returns, bootstraps = self._roll_windows(next_timestep)
        # Each environment's leaves of each field: one pass over each array, not K indexings.
        rows = zip(zip(*leaves), zip(*action_leaves),
                   zip(*extras_leaves) if extras_leaves else itertools.repeat(()),
                   zip(*returns, *bootstraps))
        n, lo = self._n, len(leaves)
        hi = lo + len(action_leaves) + len(extras_leaves)  # Then the (R, D) columns.
        for i, (observation, action, step_extras, step_returns) in enumerate(rows):
            if step_type[i] == _FIRST:
                if self._starts[i]:  # Cut short by a reset: written as at a truncation.
                    self._finish_episode(i, window_end=self._n - 1)  # Skip the FIRST's entry.
                self._start_episode(i, observation)
                continue
            if self._last_refs[i] is None:
                raise ValueError(f"environment {i}: add called before add_first")
            starts = self._starts[i]
            completes = len(starts) + 1 == n
            refs = self._cpp.Append([*observation, *action, *step_extras,
                                     *(step_returns if completes else self._no_returns)])
            starts.append((self._last_refs[i], refs[lo:hi], self._last_obs[i], action, step_extras))
            new_refs = refs[:lo]
            self._last_refs[i], self._last_obs[i] = new_refs, observation
            if completes:
                self._queue(starts.popleft(), refs[hi:], new_refs, step_returns, observation)
            if step_type[i] == _LAST:
                self._finish_episode(i)
        self._write_if_not_deferred()

    def _roll_windows(self, timestep: dm_env.TimeStep) -> tuple[list, list]:
        """Rolls every environment's reward and discount windows on by `timestep`; returns R
        and D (per leaf, [K, ...]) of the items whose n rewards fill each window."""
        self._steps += 1
        rewards = self._layout.reward.flatten(timestep.reward)
        discounts = self._layout.discount.flatten(timestep.discount)
        # A FIRST slot's entry is never read (its new episode fills the window before
        # any item uses it).
        for window, leaf in zip(self._rewards + self._discounts, rewards + discounts):
            window[:, :-1] = window[:, 1:]  # Shift out the oldest, append the newest.
            window[:, -1] = leaf
        return self._layout.leaf_returns(self._rewards, self._discounts, self._gamma, axis=1)

    def _first_add(self, actions: Any, timestep: dm_env.TimeStep) -> None:
        """Fixes the action, reward and discount fields and the columns from the first add."""
        if isinstance(actions, list):
            actions = np.asarray(actions)
        self._action = Field("action", tree.map_structure(np.asarray, actions))
        self._action.check_batch(self.num_envs)
        layout = self._layout = RewardLayout(timestep.reward, timestep.discount,
                                             batch_shape=(self.num_envs,))
        shape = (self.num_envs, self._n)
        self._rewards = [np.zeros(shape + s) for s in layout.reward_shapes]
        self._discounts = [np.ones(shape + s) for s in layout.discount_shapes]
        num_extras = 0 if self._extras is None else self._extras.num_leaves
        self._no_returns = [None] * (2 * layout.reward.num_leaves)
        self._none_tail = [None] * (self._action.num_leaves + num_extras) + self._no_returns
        self._num_before_returns = (self._observation.num_leaves + self._action.num_leaves
                                    + num_extras)
        self._squeeze = [True] * (2 * self._observation.num_leaves + self._action.num_leaves
                                  + 2 * layout.reward.num_leaves + num_extras)

    def _start_episode(self, i: int, observation: list) -> None:
        refs = self._cpp.Append([*observation, *self._none_tail])
        self._last_refs[i], self._last_obs[i] = refs[:len(observation)], observation
        self._starts[i].clear()

    def _finish_episode(self, i: int, window_end: int | None = None) -> None:
        """Writes environment i's transitions shorter than n, each with a step for its (R, D).

        The oldest pending start has m = len(starts) rewards after it: the
        window's last m entries before `window_end`.
        """
        starts = self._starts[i]
        end = self._n if window_end is None else window_end
        layout = self._layout
        none = [None] * self._num_before_returns
        while starts:
            m = len(starts)
            if layout.scalar:  # As the per-environment adder computes it.
                r, d = nstep_return(self._rewards[0][i, end - m:end],
                                    self._discounts[0][i, end - m:end], self._gamma)
                r, d = [np.float32(r)], [np.float32(d)]
            else:
                r, d = layout.leaf_returns([w[i, end - m:end] for w in self._rewards],
                                           [w[i, end - m:end] for w in self._discounts],
                                           self._gamma)
            refs = self._cpp.Append([*none, *r, *d])
            self._queue(starts.popleft(), refs[self._num_before_returns:], self._last_refs[i],
                        r + d, self._last_obs[i])

    def _queue(self, start: tuple, return_refs: list, next_refs: list, returns: list,
               next_observation: list) -> None:
        """Queues the item of `start` (refs and values) ending at o_{t+m} with (R, D)."""
        o_refs, ae_refs, o_value, a_value, e_value = start
        num_actions = len(a_value)
        self._pending_columns.append([[ref] for ref in (*o_refs, *ae_refs[:num_actions],
                                                        *return_refs, *next_refs,
                                                        *ae_refs[num_actions:])])
        half = len(returns) // 2
        self._pending_values.append((o_value, a_value, returns[:half], returns[half:],
                                     next_observation, e_value))

    # -- items ------------------------------------------------------------

    def pending(self) -> Transition | None:
        """The transitions waiting for a priority, stacked (oldest first); None if none."""
        if not self._pending_values:
            return None
        o_t, a_t, r_t, d_t, o_tp, e_t = ([np.stack(leaf) for leaf in zip(*field)]
                                         for field in zip(*self._pending_values))
        layout = self._layout
        return Transition(
            observation=self._observation.unflatten(o_t),
            action=self._action.unflatten(a_t),
            reward=layout.nest(r_t),
            discount=layout.nest(d_t),
            next_observation=self._observation.unflatten(o_tp),
            extras=() if self._extras is None else self._extras.unflatten(e_t),
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
            release = self._steps + self._hold_steps
            self._held.extend((release, columns, priority) for columns, priority
                              in zip(self._pending_columns, priorities.tolist()))
            self._pending_columns.clear()
            self._pending_values.clear()
        self._create_items()
        self._flush(self._max_in_flight)

    def _create_items(self, everything: bool = False) -> None:
        """Creates the held items whose wait is over (every one with `everything`)."""
        held, squeeze = self._held, self._squeeze
        while held and (everything or held[0][0] <= self._steps):
            _, columns, priority = held.popleft()
            if self._unconfirmed >= PENDING_ITEMS_LIMIT:  # Reverb would warn at the next.
                self._flush(min(self._max_in_flight, PENDING_ITEMS_LIMIT // 2))
            self._cpp.CreateItem(self._table, priority, columns, squeeze)
            self._unconfirmed += 1
            self.items_written += 1

    def _flush(self, max_unconfirmed: int) -> None:
        """Waits until at most `max_unconfirmed` items are unconfirmed by the server."""
        self._cpp.Flush(max_unconfirmed, -1)
        self._unconfirmed = min(self._unconfirmed, max_unconfirmed)

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
        self._create_items(everything=True)
        self._flush(self._max_in_flight)

    def close(self) -> None:
        """Writes what unfinished episodes hold, waits for the server, releases the writer."""
        self.reset()
        self._flush(0)
        self._writer.close()
