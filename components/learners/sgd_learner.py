"""What every TensorFlow learner repeats: a linearly decaying learning rate,
periodic metric rows with steps/s, and save/restore of named variable groups."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

import numpy as np
import tensorflow as tf

from agentkit import core
from agentkit.counting import Counter
from agentkit.loggers import Logger, NoOpLogger
from components.priority_writer import PriorityWriter
from components.step_loop import StepLoop


class LinearDecay:
    """A learning rate going linearly from `initial` to `final` over `steps` (0: constant).

    `rate` is a tf.Variable for the optimizer; call `update(num_steps)` inside
    the compiled step after each update.
    """

    def __init__(self, initial: float, final: float | None = None, steps: int = 0):
        self.rate = tf.Variable(initial, dtype=tf.float32, trainable=False)
        self._initial = float(initial)
        self._final = float(initial if final is None else final)
        self._steps = int(steps)

    def update(self, num_steps: tf.Tensor) -> None:
        if self._steps > 0:
            fraction = tf.minimum(tf.cast(num_steps, tf.float32) / float(self._steps), 1.0)
            self.rate.assign(self._initial + fraction * (self._final - self._initial))


class StepLogger:
    """Counts learner steps and writes a row of metrics at most every `log_every_s`."""

    def __init__(self, counter: Counter | None, logger: Logger | None, log_every_s: float = 1.0):
        self._counter = counter or Counter(prefix="learner")
        self._logger = logger or NoOpLogger()
        self._log_every_s = log_every_s
        self._steps_since_log = 0
        self._time_of_log = time.time()

    def record(self, metrics: Mapping[str, tf.Tensor], extra: Mapping | None = None,
               steps: int = 1) -> None:
        """Counts `steps` learner steps (SGD steps: a call may make several)."""
        counts = self._counter.increment(steps=steps)
        self._steps_since_log += steps
        now = time.time()
        if now - self._time_of_log >= self._log_every_s:
            row = dict(counts)
            row.update({k: float(v) for k, v in metrics.items()})
            row["learner_steps_per_s"] = self._steps_since_log / (now - self._time_of_log)
            row.update(extra or {})
            self._logger.write(row)
            self._steps_since_log = 0
            self._time_of_log = now


class VariablesSaveable(core.Saveable):
    """save()/restore() of the variables in `_variable_groups()`, named by group and index."""

    def _variable_groups(self) -> dict[str, Sequence[tf.Variable]]:
        raise NotImplementedError

    def _state_variables(self) -> dict[str, tf.Variable]:
        state = {}
        for group, variables in self._variable_groups().items():
            if isinstance(variables, tf.Variable):
                state[group] = variables
                continue
            for i, variable in enumerate(variables):
                state[f"{group}/{i:03d}/{variable.name}"] = variable
        return state

    def save(self) -> core.State:
        return {name: np.asarray(v.numpy()) for name, v in self._state_variables().items()}

    def restore(self, state: core.State) -> None:
        variables = self._state_variables()
        missing = sorted(set(variables) - set(state))
        if missing:
            raise ValueError(f"checkpoint lacks {len(missing)} variables, e.g. {missing[:3]}")
        for name, variable in variables.items():
            variable.assign(state[name])


class NonFiniteLossError(FloatingPointError):
    """A loss term was NaN or infinite: the update was skipped, the last good state kept."""


def all_finite(tensors) -> tf.Tensor:
    """True when every element of every tensor is finite (for use inside tf.function)."""
    return tf.reduce_all([tf.reduce_all(tf.math.is_finite(t)) for t in tensors])


def check_finite(metrics: Mapping[str, tf.Tensor], terms: Sequence[str], step: int) -> None:
    """Raises NonFiniteLossError naming the first non-finite loss term of a step's metrics."""
    for name in terms:
        value = float(metrics[name])
        if not np.isfinite(value):
            raise NonFiniteLossError(
                f"learner step {step}: loss term '{name}' is {value}; the update was skipped "
                f"and the learner keeps its last good state")


class LoopedStep:
    """A learner's `step()`: its compiled `_step_fn` on one or more batches, counted and logged.

    Subclasses set `_iterator`, `_step_logger`, `_num_steps` and
    `_step_fn(sample)`, a compiled step returning its metrics with a `finite`
    flag (an update whose loss was not finite was skipped inside it) and the
    loss terms named in `_finite_terms`. A `_step_fn` that makes several SGD
    steps sets `_steps_per_call`; `_batches_per_call = N` runs N batches per
    `step()` in one compiled loop (see `StepLoop`). Priorities written with
    `_write_priorities` go out at once, or once per call when N > 1.
    """

    _finite_terms: tuple[str, ...] = ("loss",)
    _steps_per_call = 1
    _batches_per_call = 1
    _step_loop: StepLoop | None = None
    _priority_writer: PriorityWriter | None = None  # Flushed at the end of each call.

    def _setup_step_loop(self, batches_per_call: int, replay_client=None,
                         table: str | None = None) -> None:
        """N batches per call; priorities (if a client is given) written once per call."""
        if batches_per_call < 1:
            raise ValueError(f"batches_per_call must be >= 1, got {batches_per_call}")
        self._batches_per_call = int(batches_per_call)
        if replay_client is not None:
            self._priority_writer = PriorityWriter(replay_client, table,
                                                   batched=self._batches_per_call > 1)

    def _write_priorities(self, keys: tf.Tensor, priorities: tf.Tensor) -> None:
        """New priorities for sampled items (inside the compiled step); none without a client."""
        if self._priority_writer is not None:
            self._priority_writer.write(keys, priorities)

    def step(self) -> None:
        if self._step_loop is None or self._step_loop.iterator is not self._iterator:
            writer = self._priority_writer
            self._step_loop = StepLoop(self._step_fn, self._iterator, self._batches_per_call,
                                       writer.flush if writer is not None else None)
        metrics, batches = self._step_loop()
        finite = bool(metrics.pop("finite"))
        # A non-finite step (always the loop's last) changed nothing; those before it count.
        applied = batches if finite else batches - 1
        self._step_logger.record(metrics, steps=applied * self._steps_per_call)
        if not finite:
            check_finite(metrics, self._finite_terms, self.num_steps + 1)


class QLearnerBase(LoopedStep, VariablesSaveable, core.Learner):
    """What Q-learners with an online and a target network share (DQN, R2D2).

    Subclasses set `_network`, `_target_network`, `_optimizer`, and what
    `LoopedStep` needs; their step's metrics carry `loss` and `grad_norm`.
    """

    _finite_terms = ("loss", "grad_norm")

    @property
    def num_steps(self) -> int:
        return int(self._num_steps.numpy())

    def get_variables(self, names: Sequence[str]) -> list[list[np.ndarray]]:
        collections = {"q": self._network.variables, "q_target": self._target_network.variables}
        return [[v.numpy() for v in collections[name]] for name in names]

    def _variable_groups(self) -> dict:
        return {
            "num_steps": self._num_steps,
            "q": self._network.variables,
            "q_target": self._target_network.variables,
            "optimizer": self._optimizer.variables,
        }
