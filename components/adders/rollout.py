"""The rollout adder (PPO, A2C): fixed-length rollouts of K lock-stepped environments.

Synchronous on-policy agents learn in rounds: every environment takes T steps
with one policy, the learner updates on all of them, and acting goes on with
the new policy. Episodes do not line up with rounds, so a rollout runs on
across episode ends. One item per round holds the K environments' T steps,
time-major, and the observation after them:

    observation  o_0 .. o_T                                   [T+1, K, ...]
    action       a_0 .. a_{T-1}                               [T, K, ...]
    reward       r_{t+1} of the transition t -> t+1           [T, K]
    discount     d_{t+1} of that transition (0 where mask is)  [T, K]
    extras       the policy's extras with a_t (behaviour logits, policy version)
    mask         1 where a_t moved o_t's episode on            [T, K]

A step whose observation ended an episode (LAST) is still a step: the
batched environment resets that slot on the next call, ignoring its action,
and returns FIRST. Such a step has mask 0, as has one whose simulator failed
and was reset (its next timestep is FIRST too). So all K environments cross a
round's boundary together, at every T-th step, whatever their episodes do;
a learner cuts returns where the mask is 0 and bootstraps from o_T.

One Reverb writer serves the K environments: each step is one append of its
batched columns. The observation o_t is appended as a partial step when it
arrives (the item that ends at t needs it before a_t exists), the rest of
step t with its transition. A rollout still unfinished at `close` or `reset`
is dropped: no policy acted one whole round with it.
"""

from __future__ import annotations

from typing import Any

import dm_env
import numpy as np
import reverb
import tensorflow as tf
import tree

from components.adders.base import BatchedAdder
from components.adders.nests import as_dtypes, numpy_dtype

_FIRST = int(dm_env.StepType.FIRST)


class BatchedRolloutAdder(BatchedAdder):
    """Writes one rollout of `rollout_length` steps of `num_envs` environments per round."""

    def __init__(self, client: reverb.Client, table: str, num_envs: int, rollout_length: int,
                 extras_spec: Any = (), max_in_flight_items: int = 0):
        if num_envs < 1:
            raise ValueError(f"num_envs must be >= 1, got {num_envs}")
        if rollout_length < 1:
            raise ValueError(f"rollout_length must be >= 1, got {rollout_length}")
        self.num_envs = num_envs
        self._table = table
        self._length = rollout_length
        self._extras_dtypes = [numpy_dtype(s) for s in tree.flatten(extras_spec)]
        # 0: an item is on the server when add returns (PPO's actor then waits for the weights
        # that learned from it); an actor that never waits (IMPALA's) goes on while N are sent.
        self._max_in_flight = int(max_in_flight_items)
        self._writer = client.trajectory_writer(num_keep_alive_refs=rollout_length + 1)
        self._started = False  # Whether the writer holds this rollout's partial step.
        self._steps = 0  # Steps of the current rollout.
        self.items_written = 0

    def add_first(self, timestep: dm_env.TimeStep) -> None:
        if not np.all(np.asarray(timestep.step_type) == _FIRST):
            raise ValueError("add_first needs FIRST timesteps in every slot")
        if self._started:
            self.reset()
        self._writer.append({"observation": timestep.observation}, partial_step=True)
        self._started = True

    def add(self, actions: Any, next_timestep: dm_env.TimeStep, extras: Any = ()) -> None:
        if not self._started:
            raise ValueError("add called before add_first")
        mask = (np.asarray(next_timestep.step_type) != _FIRST).astype(np.float32)
        self._writer.append({
            "action": np.asarray(actions),
            "reward": np.asarray(next_timestep.reward, np.float32) * mask,
            "discount": np.asarray(next_timestep.discount, np.float32) * mask,
            "extras": as_dtypes(extras, self._extras_dtypes),
            "mask": mask,
        })
        self._writer.append({"observation": next_timestep.observation}, partial_step=True)
        self._steps += 1
        if self._steps == self._length:
            self._write_item()

    def _write_item(self) -> None:
        n = self._length
        history = self._writer.history
        # The partial step holds only o_T: the other columns end one step earlier.
        trajectory = {"observation": tree.map_structure(lambda c: c[-(n + 1):],
                                                        history["observation"])}
        for key in ("action", "reward", "discount", "extras", "mask"):
            trajectory[key] = tree.map_structure(lambda c: c[-(n + 1):-1], history[key])
        self._writer.create_item(self._table, 1.0, trajectory)
        # With 0 in flight, wait until the server holds it: PPO's actor then waits for the
        # round's weights, and an item left in flight would never reach the learner.
        self._writer.flush(self._max_in_flight)
        self._steps = 0
        self.items_written += 1

    def reset(self) -> None:
        """Drops the unfinished rollout; the next call must be `add_first`."""
        if self._started:
            self._writer.end_episode(clear_buffers=True)
        self._started = False
        self._steps = 0

    def close(self) -> None:
        """Flushes the rollouts written (an unfinished one is dropped)."""
        self._writer.flush()
        self._writer.close()


def rollout_signature(spec, rollout_length: int, num_envs: int, extras_spec: Any) -> dict:
    """The signature of BatchedRolloutAdder items for an environment spec."""
    t, k = rollout_length, num_envs

    def tensor_spec(s, length):
        return tf.TensorSpec((length, k) + tuple(s.shape), tf.as_dtype(s.dtype))

    steps = tf.TensorSpec((t, k), tf.float32)
    return {
        "observation": tree.map_structure(lambda s: tensor_spec(s, t + 1), spec.observations),
        "action": tensor_spec(spec.actions, t),
        "reward": steps,
        "discount": steps,
        "extras": tree.map_structure(lambda s: tensor_spec(s, t), extras_spec),
        "mask": steps,
    }
