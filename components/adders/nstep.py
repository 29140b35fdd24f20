"""The n-step transition adder (DQN, D4PG, Ape-X).

For the transition starting at step t with m = min(n, steps left in the
episode) following rewards r_{t+1..t+m} and environment discounts
d_{t+1..t+m}:

    R_t = sum_{k=0}^{m-1} gamma^k (prod_{j=1}^{k} d_{t+j}) r_{t+k+1}
    D_t = gamma^m prod_{j=1}^{m} d_{t+j}

and the item is (o_t, a_t, R_t, D_t, o_{t+m}, e_t), with e_t the extras given
with a_t (`add(a_t, timestep_{t+1}, extras=e_t)`; only with an `extras_spec`,
else the item has no extras). A termination (d = 0) makes D_t = 0, so the
learner does not bootstrap past it; a truncation (d = 1) keeps bootstrapping
from the last observation. At the end of an episode the last
min(n, length) - 1 transitions are shorter than n and written all the same,
so episodes shorter than n still produce one item per step.

Every field may be a nest of arrays. Rewards are computed leaf by leaf: for
reward leaf r^i, d^i is the discount itself where it is one array (a scalar,
broadcast over every leaf) or its leaf i where it is a nest of the reward's
structure; R^i has the broadcast shape of r^i and d^i, D^i the shape of d^i,
and R and D are nests of the reward's structure (plain float32 scalars when
reward and discount are scalars). Each field's structure, leaf shapes and
dtypes are those of the adder's first step (extras: those of extras_spec); a
step that differs raises a ValueError that names the leaf.

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
import tree

from agentkit.types import Transition
from components.adders.base import Adder
from components.adders.nests import Field, RewardLayout, check_no_extras, column_at, extras_field

# Maps a batch of transitions (a Transition of stacked arrays) to their priorities.
PriorityFn = Callable[[Transition], np.ndarray]


def stack_transitions(transitions: list[Transition]) -> Transition:
    """One Transition whose fields are the given transitions' fields stacked."""
    return tree.map_structure(lambda *xs: np.stack(xs), *transitions)


def check_nstep_arguments(n_step: int, discount: float) -> None:
    """Clear errors for an n-step length or a discount out of range."""
    if n_step < 1:
        raise ValueError(f"n_step must be >= 1, got {n_step}")
    if not 0.0 <= discount <= 1.0:
        raise ValueError(f"discount must be in [0, 1], got {discount}")


def nstep_return(rewards, discounts, gamma: float) -> tuple[float, float]:
    """(R, D) of the formula above for one transition's m scalar rewards and discounts."""
    total, factor = 0.0, 1.0
    for reward, discount in zip(rewards, discounts):
        total += factor * float(reward)
        factor *= gamma * float(discount)
    return total, factor


class NStepTransitionAdder(Adder):
    """Writes n-step transitions, each with an initial priority.

    Priorities come from `priority_fn` over the items one step produces (1.0
    without it). With `defer_items=True` the items wait in `pending()` until
    `write_pending(priorities)`: a batched actor gathers them from all its
    adders and computes every priority in one network call. With
    `extras_spec` (a nest of specs of one environment's extras) items carry
    the extras given with their first action.
    """

    def __init__(
        self,
        client: reverb.Client,
        table: str,
        n_step: int,
        discount: float,
        priority_fn: PriorityFn | None = None,
        max_in_flight_items: int = 4,
        defer_items: bool = False,
        extras_spec: Any = None,
    ):
        check_nstep_arguments(n_step, discount)
        self._table = table
        self._n = n_step
        self._gamma = discount
        self._priority_fn = priority_fn
        self._max_in_flight = max_in_flight_items
        self._defer = defer_items
        self._extras = extras_field(extras_spec)
        # Fixed by the first step (add_first, then add): what every later step must match.
        self._observation: Field | None = None
        self._action: Field | None = None
        self._layout: RewardLayout | None = None
        self._plain = False  # The first step had one array per field and no extras.
        self._pending: list[tuple[Transition, Transition]] = []  # (references, values)
        self._end_pending = False  # The episode ended; end it in the writer after the items.
        # Keep enough history alive for n+1 observations plus the tail steps.
        self._writer = client.trajectory_writer(num_keep_alive_refs=2 * n_step + 2)
        # Per episode: (step, observation, action, extras) of steps not yet the
        # start of an item, and the rewards/discounts that followed each step
        # (floats on the scalar path, else lists of leaf arrays).
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
        self._check_observation(timestep.observation)
        self.reset()
        self._append({"observation": timestep.observation}, partial=True)
        self._observation_step = 0
        self._last_observation = timestep.observation

    def _check_observation(self, observation: Any) -> None:
        if self._observation is None:
            self._observation = Field("observation", observation)
        else:
            self._observation.flatten(observation)

    def add(self, action: Any, next_timestep: dm_env.TimeStep, extras: Any = ()) -> None:
        if self._steps == 0:
            raise ValueError("add called before add_first")
        if next_timestep.first():
            raise ValueError("add got a FIRST timestep; use add_first")
        action = self._check_step(action, next_timestep, extras)
        # Close step t with its action (and extras), open step t+1 with its observation.
        closed = {"action": action}
        if self._extras is not None:
            closed["extras"] = extras
        else:
            extras = ()
        self._append(closed, partial=False)
        self._starts.append((self._steps - 1, self._last_observation, action, extras))
        opened = {"observation": next_timestep.observation}
        returns = None
        if len(self._starts) == self._n:  # The oldest item ends at o_{t+1}: one append.
            returns = self._oldest_returns()
            opened.update(returns)
        self._append(opened, partial=True)
        self._observation_step = self._steps - 1
        self._last_observation = next_timestep.observation

        if returns is not None:
            self._write_oldest(returns)
        if next_timestep.last():
            self._finish_episode()
        if not self._defer:
            self.write_pending()

    def _check_step(self, action: Any, next_timestep: dm_env.TimeStep, extras: Any) -> Any:
        """Checks the step against the first one, then records its reward and discount.

        Returns the action as arrays (the first step fixes every field).
        """
        reward, discount = next_timestep.reward, next_timestep.discount
        if self._plain:  # One array each, scalar reward and discount, no extras: a few compares.
            observation, array = next_timestep.observation, np.asarray(action)
            try:
                plain = (observation.shape == self._observation.shape
                         and observation.dtype == self._observation.dtype
                         and array.shape == self._action.shape and array.dtype == self._action.dtype
                         and (type(reward) is float or reward.shape == ())
                         and (type(discount) is float or discount.shape == ())
                         and (extras is None or (type(extras) is tuple and not extras)))
            except AttributeError:
                plain = False
            if plain:
                self._rewards.append(float(reward))
                self._discounts.append(float(discount))
                return array
        # Any other step, checked field by field (and leaf by leaf where it differs).
        nested = tree.is_nested(action)
        action = tree.map_structure(np.asarray, action) if nested else np.asarray(action)
        if self._layout is None:
            self._action = Field("action", action)
            self._layout = RewardLayout(reward, discount)
            self._plain = (not self._observation.nested and not self._action.nested
                           and self._layout.scalar and self._extras is None)
        layout = self._layout
        self._check_observation(next_timestep.observation)
        self._action.flatten(action)
        rewards = layout.reward.flatten(reward)
        discounts = layout.discount.flatten(discount)
        if self._extras is not None:
            self._extras.flatten(extras)
        else:
            check_no_extras(extras)
        if layout.scalar:
            self._rewards.append(float(reward))
            self._discounts.append(float(discount))
        else:
            self._rewards.append([np.asarray(x, np.float64) for x in rewards])
            self._discounts.append([np.asarray(x, np.float64) for x in discounts])
        return action

    def _finish_episode(self) -> None:
        """Writes the transitions shorter than n, then ends the episode."""
        while self._starts:
            self._write_oldest()
        if self._step_open:
            self._append({}, partial=False)  # Close the step of the last observation.
        self._end_pending = True  # After the items are created (write_pending).
        self._reset_episode()

    def _append(self, data: dict, partial: bool) -> None:
        self._writer.append(data, partial_step=partial)
        if not self._step_open:
            self._steps += 1
            self._open_step_has_returns = False
        self._open_step_has_returns |= "nstep_reward" in data
        self._step_open = partial

    def _oldest_returns(self) -> dict:
        """The n-step return and discount of the item starting at the oldest pending step."""
        layout = self._layout
        if layout.scalar:
            reward, discount = nstep_return(self._rewards, self._discounts, self._gamma)
            return {"nstep_reward": np.float32(reward), "nstep_discount": np.float32(discount)}
        rewards, bootstraps = layout.leaf_returns(
            [np.stack(leaves) for leaves in zip(*self._rewards)],
            [np.stack(leaves) for leaves in zip(*self._discounts)], self._gamma)
        return {"nstep_reward": layout.nest(rewards), "nstep_discount": layout.nest(bootstraps)}

    def _write_oldest(self, appended_returns: dict | None = None) -> None:
        """Writes the item that starts at the oldest pending step.

        In mid-episode its returns were appended with o_{t+m}
        (`appended_returns`). At the episode's end each further item gets a
        step of its own holding only its returns.
        """
        start, observation, action, extras = self._starts.popleft()
        returns = appended_returns or self._oldest_returns()
        self._rewards.popleft()
        self._discounts.popleft()
        if appended_returns is None:
            if self._step_open and self._open_step_has_returns:
                self._append({}, partial=False)
            self._append(returns, partial=True)
        history = self._writer.history
        # Indices of absolute steps in the history: s - self._steps (negative).
        start, end = start - self._steps, self._observation_step - self._steps
        observations, actions = history["observation"], history["action"]
        rewards, discounts = history["nstep_reward"], history["nstep_discount"]
        if self._observation.nested or self._action.nested or self._layout.reward.nested:
            nested_obs, nested_reward = self._observation.nested, self._layout.reward.nested
            trajectory = Transition(
                column_at(observations, start, nested_obs),
                column_at(actions, start, self._action.nested),
                column_at(rewards, -1, nested_reward), column_at(discounts, -1, nested_reward),
                column_at(observations, end, nested_obs))
        else:  # The usual case: one column each.
            trajectory = Transition(observations[start], actions[start], rewards[-1],
                                    discounts[-1], observations[end])
        if self._extras is not None:
            trajectory = trajectory._replace(
                extras=column_at(history["extras"], start, self._extras.nested))
        values = Transition(observation, action, returns["nstep_reward"],
                            returns["nstep_discount"], self._last_observation, extras)
        self._pending.append((trajectory, values))

    def pending(self) -> list[Transition]:
        """The transitions waiting for a priority, oldest first."""
        return [values for _, values in self._pending]

    def write_pending(self, priorities: np.ndarray | None = None) -> None:
        """Creates the pending items with `priorities` (default: from priority_fn, or 1)."""
        if self._pending:
            if priorities is None:
                priorities = np.ones(len(self._pending))
                if self._priority_fn is not None:
                    priorities = self._priority_fn(stack_transitions(self.pending()))
            priorities = np.asarray(priorities, np.float64).reshape(-1)
            if len(priorities) != len(self._pending):
                raise ValueError(f"{len(self._pending)} items pending, "
                                 f"got {len(priorities)} priorities")
            for (trajectory, _), priority in zip(self._pending, priorities):
                self._writer.create_item(self._table, float(priority), trajectory)
                self.items_written += 1
            self._pending.clear()
            self._writer.flush(self._max_in_flight)
        if self._end_pending:
            self._end_pending = False
            self._writer.end_episode(clear_buffers=True)

    def reset(self) -> None:
        """Ends the current episode early.

        Its pending transitions are written as at a truncation (they
        bootstrap from the last observation): no experience is dropped.
        """
        if self._starts:
            self._finish_episode()
        elif self._step_open:
            self._writer.append({}, partial_step=False)  # Close the open step.
            self._end_pending = True
        self.write_pending()
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
