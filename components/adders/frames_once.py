"""n-step transitions of frame stacks (Atari's 84x84x4) that store each frame once.

An Atari observation is a stack of the last S frames, and consecutive stacks
share S - 1 of them: stored whole, every frame is stored S times. This adder
writes the items of `BatchedNStepTransitionAdder` (same n-step formula,
episode ends, priorities and deferral), but a step stores only its newest
frame, and an item gathers o_t and o_{t+m} from the S frames of each:

    frames   [S + n, H, W] uint8   frames t-S+1 .. t+m (oldest first), then n - m
                                   blank frames: o_t is frames[:S], o_{t+m} frames[m:m+S]
    scalars  [4] float32           a_t, R, D, m (one cell, written when the item completes)

`unpack_frames_once` (components.datasets) turns a batch of such items back
into the `Transition` the learner always saw, [B, H, W, S] stacks included.
An episode's first step stores all S frames of its stack, whatever padding
the environment used, so items at episode starts are exact too.

Why this layout, measured in Reverb 0.14 on Pong (bench/replay.py): an item
costs about 520 bytes plus about 155 per column in the server, more than its
compressed frames, so an item has two columns, not five (the two stacks share
frames, and Reverb reads a ref given twice in a column wrongly, so they are
one run of distinct frames; an episode's end appends n - 1 blank frames that
pad its last items' runs); and a chunk (the
unit Reverb compresses, keeps and sends) is finalized early whenever an item
references it, so each environment's frames go to a writer column of its
own, in chunks of FRAME_CHUNK_LENGTH consecutive frames of one game (which
compress together and hold an item's frames in one or two chunks), and an
item waits that many batched steps before it is created, so that the chunk
of its newest frame is complete (`close` and `reset` create every waiting
item).

The stacks are checked as they arrive: a step's second newest frame must be
its predecessor's newest, or items would reference the wrong frames.
"""

from __future__ import annotations

import collections
from typing import Any, NamedTuple

import dm_env
import numpy as np
import reverb
import tensorflow as tf

from agentkit.specs import EnvironmentSpec
from components.adders.batched_nstep import BatchedNStepTransitionAdder, require_first
from components.adders.nests import Field, check_no_extras
from components.adders.nstep import PriorityFn, nstep_return

FRAME_CHUNK_LENGTH = 8  # Consecutive frames of a game per Reverb chunk.

_FIRST = int(dm_env.StepType.FIRST)
_LAST = int(dm_env.StepType.LAST)


class FramesOnceItem(NamedTuple):
    """A replay item of `FramesOnceNStepAdder`."""

    frames: Any  # [S + n, H, W]: o_t's S frames and the m after them, then blanks.
    scalars: Any  # [4]: a_t, R, D, m.


def frames_once_signature(spec: EnvironmentSpec, n_step: int) -> FramesOnceItem:
    """The table signature of frames-once items of n-step transitions for an [H, W, S]
    frame-stack environment."""
    height, width, stack = check_frame_stack_spec(spec)
    return FramesOnceItem(frames=tf.TensorSpec((stack + n_step, height, width), tf.uint8),
                          scalars=tf.TensorSpec((4,), tf.float32))


def check_frame_stack_spec(spec: EnvironmentSpec) -> tuple[int, int, int]:
    """(H, W, S) of an environment whose frames can be stored once, else one clear error:
    one uint8 [H, W, S] observation, one int32 action, scalar rewards and discounts."""
    observation, action = spec.observations, spec.actions
    shape = tuple(getattr(observation, "shape", ()))
    problems = []
    if len(shape) != 3 or np.dtype(getattr(observation, "dtype", np.float32)) != np.uint8:
        problems.append(f"the observation must be one uint8 [H, W, S] stack of frames, got "
                        f"{shape or type(observation).__name__}")
    if tuple(getattr(action, "shape", (None,))) != () or np.dtype(
            getattr(action, "dtype", np.float32)) != np.int32:
        problems.append("the action must be one int32")
    if any(tuple(getattr(x, "shape", (None,))) != () for x in (spec.rewards, spec.discounts)):
        problems.append("rewards and discounts must be scalars")
    if problems:
        raise ValueError(f"store_frames_once: {'; '.join(problems)}; pass "
                         f"--store_frames_once=false")
    return shape


class FramesOnceNStepAdder(BatchedNStepTransitionAdder):
    """Writes the n-step transitions of K frame-stack environments, each frame once."""

    _hold_steps = FRAME_CHUNK_LENGTH

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
        super().__init__(client, table, num_envs, n_step, discount, priority_fn=priority_fn,
                         max_in_flight_items=max_in_flight_items, defer_items=defer_items)
        self._stack = 0  # S, from the first observation.
        # Per environment: the refs of its last S + n frames (oldest first).
        self._frames: list[collections.deque] = []
        self._blank: np.ndarray | None = None  # The padding frame, zeros.
        self._previous_newest: np.ndarray | None = None  # [K, H, W] of the last step.
        self._none_frames = [None] * num_envs  # Writer columns 0..K-1: the frames.

    # -- episodes ---------------------------------------------------------

    def add_first(self, timestep: dm_env.TimeStep) -> None:
        require_first(timestep)
        stacks = np.asarray(timestep.observation)
        if self._stack == 0:
            if stacks.ndim != 4 or stacks.shape[0] != self.num_envs or stacks.dtype != np.uint8:
                raise ValueError(f"store_frames_once: observations must be {self.num_envs} uint8 "
                                 f"[H, W, S] stacks of frames, got {stacks.dtype} {stacks.shape}")
            self._stack = stack = stacks.shape[-1]
            self._frames = [collections.deque(maxlen=stack + self._n)
                            for _ in range(self.num_envs)]
            self._blank = np.zeros(stacks.shape[1:3], np.uint8)
            self._observation = Field("observation", timestep.observation)
            # Environment i's frames in writer column i. A cell lives until its last item
            # is created: S frames of o_t, n steps to o_t+n (n - 1 blanks at an end), then
            # the wait, in which every step adds a frame, or S + n - 1 when episodes change.
            keep = stack + 2 * self._n + (stack + self._n) * FRAME_CHUNK_LENGTH + 8
            for i in range(self.num_envs):
                self._cpp.ConfigureChunker(i, reverb.pybind.ConstantChunkerOptions(
                    max_chunk_length=FRAME_CHUNK_LENGTH, num_keep_alive_refs=keep))

        self._previous_newest = np.ascontiguousarray(stacks[..., -1])
        for i in range(self.num_envs):
            self._start_episode(i, stacks[i])
        self._write_if_not_deferred()

    def add(self, actions: Any, next_timestep: dm_env.TimeStep, extras: Any = ()) -> None:
        if self._stack == 0:
            raise ValueError("add called before add_first")
        try:
            check_no_extras(extras)
        except ValueError:
            raise ValueError("store_frames_once: items carry no extras") from None
        actions = np.asarray(actions)
        if actions.shape != (self.num_envs,) or not np.issubdtype(actions.dtype, np.integer):
            raise ValueError(f"store_frames_once: actions must be {self.num_envs} integers, got "
                             f"{actions.dtype} {actions.shape}")
        if self._layout is None:
            self._first_add(actions, next_timestep)
            if not self._layout.scalar:
                raise ValueError("store_frames_once: rewards and discounts must be scalars")
            self._squeeze = [False, True]  # Items: [S + n, H, W] frames, [4] scalars.
        step_type = np.asarray(next_timestep.step_type)
        stacks = np.asarray(next_timestep.observation)
        newest = self._newest_frames(stacks, step_type)
        (returns,), (bootstraps,) = self._roll_windows(next_timestep)
        n = self._n
        for i in range(self.num_envs):
            if step_type[i] == _FIRST:
                if self._starts[i]:  # Cut short by a reset: written as at a truncation.
                    self._finish_episode(i, window_end=n - 1)  # Skip the FIRST's entry.
                self._start_episode(i, stacks[i])
                continue
            if self._last_refs[i] is None:
                raise ValueError(f"environment {i}: add called before add_first")
            starts = self._starts[i]
            starts.append((self._last_obs[i], actions[i]))
            frames = self._in_column(i, newest[i])
            if len(starts) == n:
                start = starts.popleft()
                scalars = np.array([start[1], returns[i], bootstraps[i], n], np.float32)
                refs = self._cpp.Append(frames + [scalars])
                self._frames[i].append(refs[i])  # Now frames t-S+1 .. t+n.
                self._queue_item(start, list(self._frames[i]), refs[-1], stacks[i], returns[i],
                                 bootstraps[i])
            else:
                self._frames[i].append(self._cpp.Append(frames)[i])
            self._last_refs[i], self._last_obs[i] = True, stacks[i]
            if step_type[i] == _LAST:
                self._finish_episode(i)
        self._write_if_not_deferred()

    def _start_episode(self, i: int, stack: np.ndarray) -> None:
        """Stores all S frames of an episode's first stack."""
        self._frames[i].clear()
        for j in range(self._stack):
            ref = self._cpp.Append(self._in_column(i, np.ascontiguousarray(stack[..., j])))[i]
            self._frames[i].append(ref)
        self._last_refs[i], self._last_obs[i] = True, stack  # (Refs live in self._frames.)
        self._starts[i].clear()

    def _finish_episode(self, i: int, window_end: int | None = None) -> None:
        """Writes environment i's transitions shorter than n (one scalars cell each), their
        runs of frames padded with n - 1 blank frames appended after the episode's last."""
        starts = self._starts[i]
        if not starts:
            return
        end = self._n if window_end is None else window_end
        frames = list(self._frames[i])  # ... the episode's last frame.
        blanks = [self._cpp.Append(self._in_column(i, self._blank))[i]
                  for _ in range(self._n - 1)]
        while starts:
            m = len(starts)
            r, d = nstep_return(self._rewards[0][i, end - m:end],
                                self._discounts[0][i, end - m:end], self._gamma)
            start = starts.popleft()
            scalars = np.array([start[1], r, d, m], np.float32)
            ref = self._cpp.Append(self._none_frames + [scalars])[-1]
            run = frames[len(frames) - self._stack - m:] + blanks[:self._n - m]
            self._queue_item(start, run, ref, self._last_obs[i], r, d)

    # -- frames -------------------------------------------------------------

    def _in_column(self, i: int, frame: np.ndarray) -> list:
        """The frame columns of an append by environment i: its frame in column i."""
        columns = list(self._none_frames)
        columns[i] = frame
        return columns

    def _newest_frames(self, stacks: np.ndarray, step_type: np.ndarray) -> np.ndarray:
        """[K, H, W]: each environment's newest frame (what its step stores), once checked:
        in every slot that went on (not FIRST), the stack's second newest frame must be the
        previous step's newest. (One comparison of K frames a step: comparing whole stacks
        cost 0.12 ms a slot, a third of the adder's time.)"""
        if stacks.shape[1:] != self._previous_newest.shape[1:] + (self._stack,):
            raise ValueError(f"store_frames_once: observations must be [H, W, {self._stack}] "
                             f"stacks like the first, got {stacks.shape[1:]}")
        newest = np.ascontiguousarray(stacks[..., -1])
        went_on = step_type != _FIRST
        if self._stack > 1 and went_on.any():
            same = (stacks[..., -2] == self._previous_newest).all(axis=(1, 2))
            wrong = np.flatnonzero(went_on & ~same)
            if len(wrong):
                raise ValueError(
                    f"store_frames_once: environment {wrong[0]}'s observation is not its "
                    f"previous one moved on by one frame; pass --store_frames_once=false for "
                    f"environments that do not stack frames")
        self._previous_newest = newest
        return newest

    # -- items ------------------------------------------------------------

    def _queue_item(self, start: tuple, frame_refs: list, scalars_ref, next_stack: np.ndarray,
                    r: float, d: float) -> None:
        o_stack, action = start
        self._pending_columns.append([frame_refs, [scalars_ref]])
        self._pending_values.append(([o_stack], [action], [np.float32(r)], [np.float32(d)],
                                     [next_stack], ()))
