"""The one learner loop: an agent gives its loss, the loop does everything else.

Per learner step, on one batch, made ready once by the agent's `prepare`
(PPO: its advantages; default: the batch itself): one SGD step on it, or on
each of K slices of it (Acme's `num_sgd_steps_per_step`), E times over it
(`epochs_per_batch`, Sample Factory's APPO epochs); or, with
`minibatches_per_epoch` M > 1, E epochs each over a fresh random order of the
batch's rows cut into M minibatches, one SGD step each (PPO's):

    outputs  = loss(sample)                         the agent's math, under a tape
    g_l      = clip_by_global_norm(d outputs[l] / d vars(l), max_norm)   per loss term l
    finite   = every loss term, every gradient norm (and `_finite_terms`) finite
    if finite:
        optimizer_i.apply(g_l, vars_i)              for each OptimizerGroup i of term l
        num_steps += 1; schedules (with the step's metrics), target networks updated
        priorities -> replay                        where outputs carry "priorities"

One `step()` runs `batches_per_call` such steps in one compiled call
(`StepLoop`), writes their priorities in one round trip where batched
(`PriorityWriter`), counts and logs them (with `data_wait_fraction`, the
share of time the learner waited for batches), and raises
`NonFiniteLossError` naming the first non-finite term after a skipped step.
Checkpoints hold the step count, every optimizer's state and learning rate,
and the variables the agent names in `_variable_groups`.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import tensorflow as tf

from agentkit import core
from components.compiled import CompiledFunction
from components.learners.finite import all_finite, check_finite
from components.learners.learner_io import LearnerIO
from components.learners.optimizers import FusedAdam
from components.learners.priority_writer import PriorityWriter
from components.learners.saveable import VariablesSaveable
from components.learners.schedules import KLAdaptive, LinearDecay
from components.learners.step_logger import StepLogger
from components.learners.step_loop import StepLoop
from components.learners.targets import TargetUpdate


@dataclasses.dataclass
class OptimizerGroup:
    """Variables that one optimizer moves along the gradient of one loss term.

    Groups that share a loss term have their gradients clipped together (one
    global norm), as if one optimizer held them all. `name` names the
    optimizer's state in checkpoints.
    """

    name: str
    loss: str
    variables: Sequence[tf.Variable]
    optimizer: Any
    schedule: LinearDecay | KLAdaptive

    def __post_init__(self):
        self.variables = list(self.variables)
        self.optimizer._initialize(self.variables)  # Slots now: restorable before a step.

    @classmethod
    def adam(cls, variables: Sequence[tf.Variable], learning_rate: float,
             learning_rate_final: float | None = None, decay_steps: int = 0,
             epsilon: float = 1e-8, name: str = "optimizer", loss: str = "loss") -> OptimizerGroup:
        """The usual group: FusedAdam on `loss` at a linearly decaying rate."""
        schedule = LinearDecay(learning_rate, learning_rate_final, decay_steps)
        return cls(name, loss, variables, FusedAdam(schedule.rate, epsilon=epsilon), schedule)


def actor_critic_groups(policy: Any, critic: Any, policy_learning_rate: float,
                        critic_learning_rate: float) -> list[OptimizerGroup]:
    """An actor-critic's two groups (D4PG's, SAC's): Adam on "critic_loss" over the critic's
    variables, and Adam on "policy_loss" over the policy's, each with its own clip; the
    names their checkpoints hold ("critic_optimizer", "policy_optimizer")."""
    return [OptimizerGroup.adam(critic.trainable_variables, critic_learning_rate,
                                name="critic_optimizer", loss="critic_loss"),
            OptimizerGroup.adam(policy.trainable_variables, policy_learning_rate,
                                name="policy_optimizer", loss="policy_loss")]


def _norm_name(loss_term: str) -> str:
    """'loss' -> 'grad_norm', 'critic_loss' -> 'critic_grad_norm'."""
    return loss_term[:-len("loss")] + "grad_norm" if loss_term.endswith("loss") \
        else f"{loss_term}_grad_norm"


class SGDLearner(VariablesSaveable, core.Learner):
    """A learner made of a loss: subclasses implement `loss(sample)` and name their variables.

    `loss(sample)` returns a dict of tensors: every loss term its groups name
    (scalars), optionally `priorities` ([B], one per sampled item, written
    back for `sample.info.key`), and any scalar metrics to log. Tensors that
    are not scalars are not logged. Subclasses also implement
    `network_groups()` (variables to checkpoint, by name) and
    `served_variables()` (what `get_variables` serves to actors, by name).
    """

    # Metrics checked for finiteness, in the order an error names them;
    # None: every loss term, then every gradient norm.
    _finite_terms: tuple[str, ...] | None = None
    # Whether `_step` is traced with autograph. The loop's own code branches and loops with
    # explicit tf.cond / tf.while_loop, so it needs none: converting the code took 2.8 of the
    # 3.8 s that tracing one SGD step took on this project's 2-core machine. A subclass whose
    # loss branches on a tensor in Python (`if x > 0:`) sets it to True.
    _autograph: bool = False

    def __init__(
        self,
        *,
        io: LearnerIO,
        groups: Sequence[OptimizerGroup],
        max_gradient_norm: float,
        targets: TargetUpdate | None = None,
        sgd_steps_per_batch: int = 1,
        epochs_per_batch: int = 1,
        minibatches_per_epoch: int = 1,
        shuffle_seed: int = 0,
        sample_signature: Any = None,
    ):
        if sgd_steps_per_batch < 1:
            raise ValueError(f"num_sgd_steps_per_step must be >= 1, got {sgd_steps_per_batch}")
        if epochs_per_batch < 1:
            raise ValueError(f"num_epochs must be >= 1, got {epochs_per_batch}")
        if minibatches_per_epoch < 1 or (minibatches_per_epoch > 1 and sgd_steps_per_batch > 1):
            raise ValueError(f"num_minibatches must be >= 1 (and 1 with num_sgd_steps_per_step "
                             f"> 1), got {minibatches_per_epoch}")
        if not groups:
            raise ValueError("a learner needs at least one OptimizerGroup")
        self._iterator = io.iterator
        self._groups = list(groups)
        self._loss_terms = list(dict.fromkeys(g.loss for g in self._groups))
        defaults = tuple(self._loss_terms) + tuple(_norm_name(t) for t in self._loss_terms)
        self._checked_terms = self._finite_terms or defaults
        # Checked for finiteness: the named terms, then every loss term and norm, once each.
        self._guarded_terms = tuple(dict.fromkeys(self._checked_terms + defaults))
        self._max_gradient_norm = float(max_gradient_norm)
        self._targets = targets
        self._batches_per_call = int(io.batches_per_call)
        self._sgd_steps = int(sgd_steps_per_batch)
        self._epochs = int(epochs_per_batch)
        self._minibatches = int(minibatches_per_epoch)
        self._shuffle = tf.random.Generator.from_seed(shuffle_seed)
        # One SGD step on a minibatch, compiled on its own and called from the epochs' loop.
        self._minibatch_fn = tf.function(lambda data: self._sgd_step(data)[0],
                                         autograph=self._autograph, reduce_retracing=True)
        self._priority_writer = None
        if io.replay_client is not None:
            self._priority_writer = PriorityWriter(io.replay_client, io.table,
                                                   batched=self._batches_per_call > 1)
        self._num_steps = tf.Variable(0, dtype=tf.int64, trainable=False)
        self._step_logger = StepLogger(io.counter, io.logger, io.log_every_s)
        self._step_loop: StepLoop | None = None
        self._wait_s, self._first_call = 0.0, None
        self.batches_learned = 0  # Batches whose update was applied, in this process.
        if sample_signature is None:
            self._step_fn = tf.function(self._step, autograph=self._autograph)
        else:  # Batches from Python (a queue's): fed as tensors to the one concrete function.
            self._step_fn = CompiledFunction(self._step, [sample_signature],
                                             autograph=self._autograph)

    # -- what a subclass provides ----------------------------------------------

    def loss(self, sample: Any) -> dict[str, tf.Tensor]:
        raise NotImplementedError

    def prepare(self, sample: Any) -> tuple[Any, dict[str, tf.Tensor]]:
        """The batch as the SGD steps take it (with minibatches: rows along the leading axis),
        and metrics of the batch as a whole; once a batch, whatever its epochs, compiled. By
        default the sample itself and none. PPO: its advantages and the policy lag; IMPALA:
        the input normaliser's statistics moved by the batch."""
        return sample, {}

    def _after_batch(self, finite: tf.Tensor) -> None:
        """In the compiled step, after the batch's SGD steps (`finite`: all applied)."""
        del finite

    def network_groups(self) -> dict[str, Sequence[tf.Variable]]:
        """The networks' variables a checkpoint holds, by name (online and target networks,
        and any other learned state, such as SAC's temperature)."""
        raise NotImplementedError

    def served_variables(self) -> dict[str, Sequence[tf.Variable]]:
        """What `get_variables` serves to actors and evaluators, by the names their variable
        clients ask for (usually the online networks)."""
        raise NotImplementedError

    def _extra_log_values(self, elapsed_s: float) -> dict[str, float]:
        """Values added to each logged row (IMPALA: unrolls learned)."""
        del elapsed_s
        return {}

    # -- the compiled step ---------------------------------------------------------

    def _step(self, sample: Any) -> dict[str, tf.Tensor]:
        """The batch made ready (`prepare`), then its epochs: of minibatches, or of passes
        over the whole batch (APPO's epochs; their metrics the last pass's); a non-finite
        step ends them."""
        data, batch_metrics = self.prepare(sample)
        if self._minibatches > 1:
            metrics = self._minibatch_epochs(data)
        else:
            metrics = self._one_pass(data)
            if self._epochs > 1:
                _, metrics = tf.while_loop(
                    lambda i, metrics: tf.logical_and(i < self._epochs, metrics["finite"]),
                    lambda i, metrics: (i + 1, self._one_pass(data)), (tf.constant(1), metrics))
        metrics = dict(metrics, **batch_metrics)
        self._after_batch(metrics["finite"])
        return metrics

    def _minibatch_epochs(self, data: Any) -> dict[str, tf.Tensor]:
        """`epochs_per_batch` epochs, each over a fresh random order of the N rows cut into M
        minibatches of N // M (the rest of the order left out), one SGD step each. The
        metrics are the means over the steps taken; a non-finite step (which changed
        nothing) ends the loop, and the loop raises naming it."""
        n = tf.shape(tf.nest.flatten(data)[0])[0]
        size = n // self._minibatches
        order = tf.argsort(self._shuffle.uniform([self._epochs, n]), axis=1)
        order = tf.reshape(order[:, :size * self._minibatches], [-1, size])

        def minibatch(i):
            return tf.nest.map_structure(lambda x: tf.gather(x, order[i]), data)

        first = self._minibatch_fn(minibatch(0))
        averaged = [name for name, v in first.items()
                    if v.dtype.is_floating and name != "learning_rate"]

        def body(i, sums, finite):
            metrics = self._minibatch_fn(minibatch(i))
            sums = {name: sums[name] + metrics[name] for name in averaged}
            return i + 1, sums, tf.logical_and(finite, metrics["finite"])

        done, sums, finite = tf.while_loop(
            lambda i, sums, finite: tf.logical_and(i < tf.shape(order)[0], finite), body,
            (tf.constant(1), {name: first[name] for name in averaged}, first["finite"]))
        count = tf.cast(done, tf.float32)
        means = {name: value / count for name, value in sums.items()}
        means.update(finite=finite, learning_rate=tf.identity(self._groups[0].schedule.rate))
        return means

    def _one_pass(self, sample: Any) -> dict[str, tf.Tensor]:
        if self._sgd_steps == 1:
            metrics, priorities, finite = self._sgd_step(sample)
            if priorities is not None:  # A skipped step writes nothing.
                def write() -> tf.Tensor:
                    self._write_priorities(sample.info.key, priorities)
                    return tf.constant(True)

                tf.cond(finite, write, lambda: tf.constant(False))
            return metrics
        return self._sliced_step(sample)

    def _sliced_step(self, sample: Any) -> dict[str, tf.Tensor]:
        """K SGD steps on the K slices of a batch of K x B items; metrics are their means.

        A slice whose step was skipped (not finite) gives its items no new
        priorities; the other slices still apply.
        """
        k = self._sgd_steps
        slices = tf.nest.map_structure(
            lambda x: tf.reshape(x, tf.concat([[k, -1], tf.shape(x)[1:]], axis=0)), sample)
        first, priorities, finite = self._sgd_step(tf.nest.map_structure(lambda x: x[0], slices))
        averaged = [name for name, v in first.items()
                    if v.dtype.is_floating and name != "learning_rate"]
        slice_size = tf.shape(slices.info.key)[1:2]
        kept = tf.TensorArray(tf.bool, size=k).write(0, tf.fill(slice_size, finite))
        written = tf.TensorArray(tf.float32, size=k)
        if priorities is not None:
            written = written.write(0, tf.cast(priorities, tf.float32))

        def body(i, sums, written, kept):
            metrics, priorities_i, finite_i = self._sgd_step(
                tf.nest.map_structure(lambda x: x[i], slices))
            sums = {name: sums[name] + metrics[name] for name in averaged}
            if priorities_i is not None:
                written = written.write(i, tf.cast(priorities_i, tf.float32))
            return i + 1, sums, written, kept.write(i, tf.fill(slice_size, finite_i))

        _, sums, written, kept = tf.while_loop(
            lambda i, *_: i < k, body,
            (tf.constant(1), {name: first[name] for name in averaged}, written, kept))
        mask = kept.concat()  # Per item: whether its slice's step was applied.
        if priorities is not None:
            self._write_priorities(tf.boolean_mask(sample.info.key, mask),
                                   tf.boolean_mask(written.concat(), mask))
        means = {name: value / float(k) for name, value in sums.items()}
        means["finite"] = tf.reduce_all(mask)
        means["learning_rate"] = tf.identity(self._groups[0].schedule.rate)
        return means

    def _sgd_step(self, sample: Any) -> tuple[dict[str, tf.Tensor], tf.Tensor | None, tf.Tensor]:
        """One update on one batch: (metrics, priorities or None, whether it was applied)."""
        with tf.GradientTape(persistent=len(self._loss_terms) > 1) as tape:
            outputs = self.loss(sample)
        gradients: dict[int, list] = {}
        norms = {}
        for term in self._loss_terms:
            members = [i for i, g in enumerate(self._groups) if g.loss == term]
            variables = [v for i in members for v in self._groups[i].variables]
            clipped, norm = tf.clip_by_global_norm(tape.gradient(outputs[term], variables),
                                                   self._max_gradient_norm)
            norms[_norm_name(term)] = norm
            start = 0
            for i in members:
                size = len(self._groups[i].variables)
                gradients[i] = clipped[start:start + size]
                start += size
        del tape
        metrics = {name: value for name, value in outputs.items()
                   if name != "priorities" and value.shape.rank == 0}
        metrics.update(norms)
        finite = all_finite([metrics[name] for name in self._guarded_terms])

        def apply() -> tf.Tensor:
            for i, group in enumerate(self._groups):
                group.optimizer.apply(gradients[i], group.variables)
            self._num_steps.assign_add(1)
            for group in self._groups:
                group.schedule.update(self._num_steps, metrics)
            if self._targets is not None:
                self._targets.update(self._num_steps)
            return tf.constant(True)

        # A non-finite batch changes nothing: weights, steps, priorities. An explicit cond,
        # not autograph's `if`: a learner may then trace its step without autograph (PPO).
        tf.cond(finite, apply, lambda: tf.constant(False))
        metrics["learning_rate"] = tf.identity(self._groups[0].schedule.rate)
        metrics["finite"] = finite
        return metrics, outputs.get("priorities"), finite

    def _write_priorities(self, keys: tf.Tensor, priorities: tf.Tensor) -> None:
        if self._priority_writer is not None:
            self._priority_writer.write(keys, priorities)

    # -- the Python side -------------------------------------------------------------

    def step(self) -> None:
        if self._step_loop is None or self._step_loop.iterator is not self._iterator:
            writer = self._priority_writer
            self._step_loop = StepLoop(self._step_fn, self._iterator, self._batches_per_call,
                                       writer.flush if writer is not None else None)
        result = self._step_loop()
        metrics = result.metrics
        finite = bool(metrics.pop("finite"))
        # A non-finite step (always the loop's last) changed nothing; those before it count.
        applied = result.steps if finite else result.steps - 1
        self.batches_learned += applied
        # Which side limits the run: the share of time spent waiting for data
        # since the first call (near 1: acting is too slow; near 0: learning is).
        if self._first_call is None:  # Count from the first batch: not the start-up fill.
            self._first_call = time.monotonic()
        else:
            self._wait_s += result.wait_s
        elapsed = time.monotonic() - self._first_call
        extra = self._extra_log_values(elapsed)
        if elapsed >= 1.0:  # Rates over less than a second say nothing.
            extra["data_wait_fraction"] = min(1.0, self._wait_s / elapsed)
        self._step_logger.record(metrics, extra,
                                 steps=applied * self._sgd_steps * self._epochs * self._minibatches)
        if not finite:
            check_finite(metrics, self._checked_terms, self.num_steps + 1)

    @property
    def num_steps(self) -> int:
        return int(self._num_steps.numpy())

    def get_variables(self, names: Sequence[str]) -> list[list[np.ndarray]]:
        served = self.served_variables()
        return [[v.numpy() for v in served[name]] for name in names]

    def _variable_groups(self) -> Mapping[str, Any]:
        groups: dict[str, Any] = {"num_steps": self._num_steps}
        groups.update(self.network_groups())
        for group in self._groups:
            groups[group.name] = group.optimizer.variables
            groups[f"{group.name}_learning_rate"] = group.schedule.rate
        return groups
