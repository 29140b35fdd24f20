"""Central inference (SEED RL, GA3C): one node holds the behaviour policy and answers the
actors' observation requests in batches; the actors only step environments.

The inference node makes the agent's networks and one behaviour policy through the
builder contract, keeps their weights fresh from the learner (the actors fetch none),
and serves `infer()` calls from many actors at once: its server thread takes the first
waiting request, gathers more until their rows reach `batch_size` or `deadline_ms` has
passed since the first arrived (as GA3C's predictor drains its queue), makes one policy
call for all of them and hands each caller its rows.

An actor acts through a `RemotePolicy`, which has the calling convention of the local
policy it stands for: `policy(observation)` for a feed-forward one (returning actions, or
actions and extras), `policy(observation, state)` for a recurrent one (returning actions,
extras and the new state). The actor still builds the agent's networks (for the
builder's `make_actor`), but makes no policy call and fetches no weights. The inference
node keeps each environment slot's core state, as SEED does: after the first call a
`RemotePolicy` sends only the rows that its actor reset to the initial state at episode
starts, and gets the new state back for its adders (items carry the state a step began
with). So the adders and the replay see the same items as with local inference.

One behaviour policy serves every actor: that of actor 0 of 1. Exploration that differs
by actor (DQN's Ape-X epsilons) is therefore the same for all, and a schedule (epsilon
decay) counts every actor's steps.
"""

from __future__ import annotations

import dataclasses
import threading
import time
import uuid
from typing import Any

import numpy as np
import tree

from agentkit.builders import ActorLearnerBuilder
from agentkit.specs import EnvironmentSpec
from launch_programs.schedules import resume_schedule

SEND_STATE = "send-state"  # The answer to a caller whose slots' states this node does not hold.


@dataclasses.dataclass
class _Request:
    key: str
    observation: Any
    reset: np.ndarray | None  # Recurrent: rows whose state the caller reset (None: feed-forward).
    reset_state: Any  # Those rows' initial state.
    rows: int
    step: int = 0  # Recurrent: the caller's call count; the node holds the state after step - 1.
    arrived: float = dataclasses.field(default_factory=time.monotonic)
    done: threading.Event = dataclasses.field(default_factory=threading.Event)
    result: Any = None
    error: BaseException | None = None


def _concat(structures: list) -> Any:
    return tree.map_structure(lambda *xs: np.concatenate([np.asarray(x) for x in xs]), *structures)


def _rows(structure: Any, start: int, stop: int) -> Any:
    return tree.map_structure(lambda x: np.asarray(x)[start:stop], structure)


class InferenceNode:
    """Serves batched policy calls to every actor; its weights come from `variable_source`."""

    def __init__(
        self,
        *,
        builder: ActorLearnerBuilder,
        spec: EnvironmentSpec,
        variable_source,
        counter=None,
        seed: int = 0,
        batch_size: int = 1,
        deadline_ms: float = 2.0,
    ):
        if batch_size < 1:
            raise ValueError(f"inference batch_size must be >= 1, got {batch_size}")
        networks = builder.make_networks(spec=spec)
        self._policy = builder.make_policy(networks=networks, spec=spec, seed=seed * 7919,
                                           actor_id=0, num_actors=1)
        resume_schedule(self._policy, counter, share=1)  # Every actor's steps are its own.
        # The agent's own actor, for its variable client only: the weights reach this node.
        self._weights = builder.make_actor(policy=self._policy, networks=networks, adder=None,
                                           variable_source=variable_source)
        self._batch_size = batch_size
        self._deadline_s = deadline_ms / 1000.0
        self._queue: list[_Request] = []
        self._lock = threading.Condition()
        self._states: dict[str, tuple[int, Any]] = {}  # Recurrent: caller -> (step, states).
        self._stop = threading.Event()
        self._failed: BaseException | None = None  # run() ended with this: callers get it.
        self.calls = 0  # Policy calls made.
        self.requests = 0  # Requests answered.
        self.rows = 0  # Environment rows answered.
        self.state_rows_received = 0  # Recurrent: state rows the actors sent (resets only).
        self._wait_s = 0.0  # Answered requests' total time from arrival to answer.

    # -- the actors' side ---------------------------------------------------------------

    def infer(self, key: str, observation: Any, reset: np.ndarray | None = None,
              reset_state: Any = None, step: int = 0) -> Any:
        """The policy's output for `observation` (rows of one caller), batched with others'.

        Recurrent callers also give the rows they reset (`reset`, their initial states in
        `reset_state`) and their call count `step`; the answer is SEND_STATE when this node
        does not hold their states as of the step before (its first call, a restarted node,
        a retried call that had already run)."""
        rows = len(tree.flatten(observation)[0])
        request = _Request(key, observation, reset, reset_state, rows, step)
        with self._lock:
            if self._failed is not None:
                raise RuntimeError(f"the inference node failed: {self._failed}")
            self._queue.append(request)
            self._lock.notify()
        while not request.done.wait(0.5):
            # A stopped node serves the batch it has taken (its first call may be a trace
            # of a second or more): only a request still queued is answered with the stop.
            if self._stop.is_set() and self._unqueue(request):
                raise RuntimeError("the inference node stopped")
        if request.error is not None:
            raise request.error
        if not isinstance(request.result, str):
            with self._lock:
                self._wait_s += time.monotonic() - request.arrived
        return request.result

    def stats(self) -> dict[str, float]:
        """Calls, requests and rows so far, the rows per call and the mean request latency."""
        with self._lock:
            return {"calls": self.calls, "requests": self.requests, "rows": self.rows,
                    "rows_per_call": self.rows / self.calls if self.calls else 0.0,
                    "mean_latency_ms": 1000 * self._wait_s / self.requests if self.requests else 0.0,
                    "state_rows_received": self.state_rows_received}

    def _unqueue(self, request: _Request) -> bool:
        """Takes `request` out of the queue; False if the server has already taken it."""
        with self._lock:
            for i, queued in enumerate(self._queue):
                if queued is request:
                    del self._queue[i]
                    return True
        return False

    # -- the server --------------------------------------------------------------------

    def _take_batch(self) -> list[_Request]:
        """The waiting requests and those that arrive until the rows suffice or the deadline
        passes, counted from the first one's arrival."""
        with self._lock:
            while not self._queue and not self._stop.is_set():
                self._lock.wait(0.2)
            if self._stop.is_set():
                return []
            deadline = self._queue[0].arrived + self._deadline_s
            while sum(r.rows for r in self._queue) < self._batch_size:
                left = deadline - time.monotonic()
                if left <= 0 or self._stop.is_set():
                    break
                self._lock.wait(left)
            batch, self._queue = self._queue, []
            return batch

    def _state_for(self, request: _Request) -> Any:
        """The caller's slots' states, with the rows it reset replaced by their initial state;
        None when this node does not hold them as of the caller's previous step."""
        reset = np.asarray(request.reset, bool)
        step, state = self._states.get(request.key, (None, None))
        if reset.all():
            state = request.reset_state
        elif state is None or step != request.step - 1:
            return None
        elif reset.any():
            index = np.clip(np.cumsum(reset) - 1, 0, None)  # Row i's place among the sent rows.
            state = tree.map_structure(
                lambda s, r: np.where(reset.reshape((-1,) + (1,) * (s.ndim - 1)), r[index], s),
                state, request.reset_state)
        self.state_rows_received += int(reset.sum())
        return state

    def _serve(self, batch: list[_Request]) -> None:
        """One policy call for `batch`; each request gets its rows (or SEND_STATE)."""
        recurrent = batch[0].reset is not None
        if recurrent:
            known = [(r, self._state_for(r)) for r in batch]
            for request, state in known:
                if state is None:  # The caller sends every row again.
                    request.result = SEND_STATE
            batch = [r for r, state in known if state is not None]
            if not batch:
                return
            observation = _concat([r.observation for r in batch])
            states = _concat([state for _, state in known if state is not None])
            actions, extras, new_state = self._policy(observation, states)
            output = (np.asarray(actions), tree.map_structure(np.asarray, extras),
                      tree.map_structure(np.asarray, new_state))
        else:
            output = tree.map_structure(np.asarray, self._policy(
                _concat([r.observation for r in batch])))
        self._weights.update()
        start = 0
        for request in batch:
            stop = start + request.rows
            request.result = _rows(output, start, stop)
            if recurrent:
                self._states[request.key] = (request.step, request.result[2])
            start = stop
        with self._lock:
            self.calls += 1
            self.requests += len(batch)
            self.rows += start

    def run(self) -> None:
        try:
            self._weights.update(wait=True)  # No answer before the learner's weights are here.
            while not self._stop.is_set():
                batch = self._take_batch()
                if not batch:
                    continue
                try:
                    if len({r.reset is None for r in batch}) > 1:
                        raise ValueError("feed-forward and recurrent requests in one batch")
                    self._serve(batch)
                except Exception as error:  # noqa: BLE001 - each caller gets it; the node goes on.
                    for request in batch:
                        request.error = error
                finally:
                    for request in batch:
                        request.done.set()
        except BaseException as error:
            self._fail(error)
            raise
        finally:
            self._fail(RuntimeError("the inference node stopped"))

    def _fail(self, error: BaseException) -> None:
        """Answers every waiting request with `error` and refuses new ones."""
        with self._lock:
            if self._failed is None:
                self._failed = error
            waiting, self._queue = self._queue, []
        for request in waiting:
            request.error = error
            request.done.set()

    def stop(self) -> None:
        self._stop.set()
        with self._lock:
            self._lock.notify_all()


class RemotePolicy:
    """Stands in an actor for the behaviour policy that the inference node holds."""

    def __init__(self, inference, name: str = ""):
        self._inference = inference
        self._key = f"{name or 'actor'}-{uuid.uuid4().hex[:8]}"
        self._last_state = None  # Recurrent: the state last handed to the actor.
        self._step = 0  # Recurrent calls made.
        self.calls = 0
        self.seconds = 0.0  # In calls, as the actor sees them (transport included).

    def __call__(self, observation: Any, state: Any = None) -> Any:
        start = time.monotonic()
        try:
            return self._call(observation, state)
        finally:
            self.calls += 1
            self.seconds += time.monotonic() - start

    def _call(self, observation: Any, state: Any) -> Any:
        if state is None:
            return self._inference.infer(self._key, observation)
        state = tree.map_structure(np.asarray, state)
        rows = len(tree.flatten(state)[0])
        reset = np.ones(rows, bool)  # First call, or another layout: every row.
        if self._last_state is not None and _same_shapes(state, self._last_state):
            reset[:] = False  # The rows the actor set back to the initial state since.
            for now, last in zip(tree.flatten(state), tree.flatten(self._last_state)):
                reset |= (now != last).reshape(rows, -1).any(axis=1)
        self._step += 1
        result = self._inference.infer(self._key, observation, reset,
                                       tree.map_structure(lambda s: s[reset], state), self._step)
        if isinstance(result, str) and result == SEND_STATE:  # The node lacks this step's states.
            self._step += 1
            result = self._inference.infer(self._key, observation, np.ones(rows, bool), state,
                                           self._step)
        self._last_state = result[2]
        return result


def _same_shapes(a: Any, b: Any) -> bool:
    try:
        tree.assert_same_structure(a, b)
    except (ValueError, TypeError):
        return False
    return all(np.shape(x) == np.shape(y) for x, y in zip(tree.flatten(a), tree.flatten(b)))
