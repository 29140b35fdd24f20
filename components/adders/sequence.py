"""The sequence adder: fixed-length, overlapping sequences of an episode's steps.

Each item holds L consecutive steps of one episode (`sequence_length`); item
k starts at step kP (`period`), so consecutive items overlap by L - P steps.
Step t carries

    observation o_t, action a_t, reward r_{t+1}, discount d_{t+1},
    extras_t (e.g. behaviour logits, the core state the step began with),
    mask_t (1 where a_t was taken)

so a recurrent learner restarts its core from the first step's stored state
(R2D2's stored-state strategy) and IMPALA-style unrolls (L = T + 1, P = T)
share their last step with the next unroll.

An episode's last observation is a step with mask 0 (no action follows it).
If no item covers it yet, one more item is written, padded after it with
zero steps (mask 0, reward 0, discount 0) to length L. A learner gives masked
steps no weight. With the environment's discount kept at the step before, a
truncated episode still bootstraps from its last observation and a
terminated one does not.
"""

from __future__ import annotations

from typing import Any

import dm_env
import numpy as np
import reverb
import tensorflow as tf
import tree

from components.adders.base import Adder
from components.adders.nests import as_dtypes, numpy_dtype


class SequenceAdder(Adder):
    """Writes sequences of `sequence_length` steps, one every `period` steps, to `table`."""

    def __init__(
        self,
        client: reverb.Client,
        table: str,
        sequence_length: int,
        period: int,
        extras_spec: Any,
        max_in_flight_items: int = 1,
        priority: float = 1.0,
    ):
        if sequence_length < 2:
            raise ValueError(f"sequence_length must be >= 2, got {sequence_length}")
        if not 1 <= period <= sequence_length:
            raise ValueError(f"period must be in [1, sequence_length = {sequence_length}], "
                             f"got {period}")
        self._table = table
        self._length = sequence_length
        self._period = period
        self._priority = float(priority)
        self._extras_spec = extras_spec
        self._extras_dtypes = [numpy_dtype(s) for s in tree.flatten(extras_spec)]
        self._max_in_flight = max_in_flight_items
        self._writer = client.trajectory_writer(num_keep_alive_refs=sequence_length)
        self._observation: Any = None  # The latest observation, not yet written.
        self._action: np.ndarray | None = None  # The latest action (for padding's shape).
        self._steps = 0  # Steps written in this episode.
        self._items = 0  # Items written in this episode.
        self.items_written = 0

    def add_first(self, timestep: dm_env.TimeStep) -> None:
        if not timestep.first():
            raise ValueError(f"add_first needs a FIRST timestep, got {timestep.step_type}")
        self.reset()
        self._observation = timestep.observation

    def add(self, action: Any, next_timestep: dm_env.TimeStep, extras: Any = ()) -> None:
        if self._observation is None:
            raise ValueError("add called before add_first")
        if next_timestep.first():
            raise ValueError("add got a FIRST timestep; use add_first")
        self._append(self._observation, action, next_timestep.reward, next_timestep.discount,
                     extras, mask=1.0)
        self._observation = next_timestep.observation
        if next_timestep.last():
            self._end_episode()

    def _append(self, observation, action, reward, discount, extras, mask: float) -> None:
        self._action = np.asarray(action)
        self._writer.append({
            "observation": observation,
            "action": self._action,
            "reward": np.float32(reward),
            "discount": np.float32(discount),
            "extras": as_dtypes(extras, self._extras_dtypes),
            "mask": np.float32(mask),
        })
        self._steps += 1
        if self._steps == self._next_item_end():
            self._write_item()

    def _next_item_end(self) -> int:
        """The step count at which the next item is complete."""
        return self._items * self._period + self._length

    def _zeros_like_step(self) -> dict:
        return {
            "observation": tree.map_structure(np.zeros_like, self._observation),
            "action": np.zeros_like(self._action),
            "extras": tree.map_structure(
                lambda s: np.zeros(s.shape, numpy_dtype(s)), self._extras_spec),
        }

    def _end_episode(self) -> None:
        """Writes the last observation (mask 0), pads the last item, ends the episode."""
        if self._observation is None or self._steps == 0:
            self._reset_episode()
            return
        zeros = self._zeros_like_step()
        # The last observation: no action follows it.
        self._append(self._observation, zeros["action"], 0.0, 0.0, zeros["extras"], mask=0.0)
        # The last item written may already hold this step; else pad one more.
        covered = (self._items - 1) * self._period + self._length if self._items else 0
        if self._steps > covered:
            end = self._next_item_end()  # Fixed before _append counts the item.
            while self._steps < end:
                self._append(zeros["observation"], zeros["action"], 0.0, 0.0, zeros["extras"],
                             mask=0.0)
        self._writer.end_episode(clear_buffers=True)
        self._reset_episode()

    def _write_item(self) -> None:
        n = self._length
        history = self._writer.history
        trajectory = {key: tree.map_structure(lambda column: column[-n:], history[key])
                      for key in ("observation", "action", "reward", "discount", "extras", "mask")}
        self._writer.create_item(self._table, self._priority, trajectory)
        self._writer.flush(self._max_in_flight)
        self._items += 1
        self.items_written += 1

    def reset(self) -> None:
        """Ends the current episode early: its steps are written as at a truncation."""
        if self._steps:
            self._end_episode()
        self._reset_episode()

    def _reset_episode(self) -> None:
        self._observation = None
        self._steps = 0
        self._items = 0

    def close(self) -> None:
        """Writes the unfinished episode's steps (padded), then flushes."""
        self.reset()
        self._writer.flush()
        self._writer.close()



def sequence_signature(spec, sequence_length: int, extras_spec: Any) -> dict:
    """The signature of SequenceAdder items for an environment spec."""
    n = sequence_length

    def tensor_spec(s, dtype=None):
        return tf.TensorSpec((n,) + tuple(s.shape), tf.as_dtype(dtype or s.dtype))

    return {
        "observation": tree.map_structure(tensor_spec, spec.observations),
        "action": tensor_spec(spec.actions),
        "reward": tf.TensorSpec((n,), tf.float32),
        "discount": tf.TensorSpec((n,), tf.float32),
        "extras": tree.map_structure(tensor_spec, extras_spec),
        "mask": tf.TensorSpec((n,), tf.float32),
    }
