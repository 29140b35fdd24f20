"""The unroll adder (IMPALA): fixed-length unrolls with the behaviour policy's extras.

Each item holds T + 1 consecutive steps of one episode; step t carries

    observation o_t, action a_t, reward r_{t+1}, discount d_{t+1},
    extras_t (e.g. the behaviour logits), mask_t (1 where a_t was taken)

so the learner uses steps 0..T-1 for actions, rewards and log-ratios, and
o_T to bootstrap. Consecutive unrolls overlap by that one step: item k covers
steps kT..kT+T, so every action is learned from exactly once.

An episode's last observation is a step with mask 0 (no action follows it);
the last unroll is padded with zero steps (mask 0) to T + 1. A learner must
give masked steps no weight and no V-trace correction. With the environment's
discount at that last step, a truncated episode still bootstraps from its
last observation and a terminated one does not.
"""

from __future__ import annotations

from typing import Any

import dm_env
import numpy as np
import reverb
import tensorflow as tf
import tree

from components.adders.base import Adder


class UnrollAdder(Adder):
    """Writes unrolls of `unroll_length` actions (T + 1 steps) to `table`."""

    def __init__(
        self,
        client: reverb.Client,
        table: str,
        unroll_length: int,
        extras_spec: Any,
        max_in_flight_items: int = 1,
    ):
        if unroll_length < 1:
            raise ValueError(f"unroll_length must be >= 1, got {unroll_length}")
        self._table = table
        self._length = unroll_length
        self._extras_spec = extras_spec
        self._max_in_flight = max_in_flight_items
        self._writer = client.trajectory_writer(num_keep_alive_refs=unroll_length + 1)
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
            "action": np.asarray(action),
            "reward": np.float32(reward),
            "discount": np.float32(discount),
            "extras": tree.map_structure(lambda x: np.asarray(x, np.float32), extras),
            "mask": np.float32(mask),
        })
        self._steps += 1
        if self._steps == (self._items + 1) * self._length + 1:
            self._write_item()

    def _zeros_like_step(self) -> dict:
        return {
            "observation": tree.map_structure(np.zeros_like, self._observation),
            "action": np.zeros_like(self._action),
            "extras": tree.map_structure(
                lambda s: np.zeros(s.shape, np.float32), self._extras_spec),
        }

    def _end_episode(self) -> None:
        """Writes the last observation (mask 0), pads the last unroll, ends the episode."""
        if self._observation is None or self._steps == 0:
            self._reset_episode()
            return
        zeros = self._zeros_like_step()
        # The last observation: no action follows it.
        self._append(self._observation, zeros["action"], 0.0, 0.0, zeros["extras"], mask=0.0)
        # The last item's bootstrap step may already be this one; else pad.
        if self._steps != self._items * self._length + 1:
            end = (self._items + 1) * self._length + 1  # Fixed before _append counts the item.
            while self._steps < end:
                self._append(zeros["observation"], zeros["action"], 0.0, 0.0, zeros["extras"],
                             mask=0.0)
        self._writer.end_episode(clear_buffers=True)
        self._reset_episode()

    def _write_item(self) -> None:
        n = self._length + 1
        history = self._writer.history
        trajectory = {key: tree.map_structure(lambda column: column[-n:], history[key])
                      for key in ("observation", "action", "reward", "discount", "extras", "mask")}
        self._writer.create_item(self._table, 1.0, trajectory)
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


def unroll_signature(spec, unroll_length: int, extras_spec: Any) -> dict:
    """The signature of UnrollAdder items for an environment spec."""
    n = unroll_length + 1

    def tensor_spec(s, dtype=None):
        return tf.TensorSpec((n,) + tuple(s.shape), tf.as_dtype(dtype or s.dtype))

    return {
        "observation": tree.map_structure(tensor_spec, spec.observations),
        "action": tensor_spec(spec.actions),
        "reward": tf.TensorSpec((n,), tf.float32),
        "discount": tf.TensorSpec((n,), tf.float32),
        "extras": tree.map_structure(lambda s: tensor_spec(s, np.float32), extras_spec),
        "mask": tf.TensorSpec((n,), tf.float32),
    }
