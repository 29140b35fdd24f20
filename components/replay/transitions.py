"""The replay parts of every agent that learns from n-step transitions (DQN, D4PG, ...).

A prioritized (or uniform) FIFO table of `Transition` items under a
sample-to-insert rate limiter, batches from it through tf.data, and the
batched n-step adder that fills it. An agent's builder inherits these three
methods and keeps only its networks, policy, actor and
learner. The config must carry the fields of `components.replay.NStepReplayConfig`
(inheriting it is the simplest way).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import reverb

from agentkit.builders import ActorLearnerBuilder
from agentkit.specs import EnvironmentSpec
from components.adders import (
    BatchedNStepTransitionAdder,
    FramesOnceNStepAdder,
    check_frame_stack_spec,
    frames_once_signature,
)
from components.datasets import make_batch_iterator, unpack_frames_once
from components.learners import LearnerIO, make_learner_io
from components.replay.tables import make_rate_limiter, make_replay_table, transition_signature


class NStepTransitionReplay(ActorLearnerBuilder):
    """`make_replay_tables`, `make_dataset_iterator` and `make_adder` for n-step transitions.

    Hooks: `_defer_items` (the actor computes the items' priorities itself,
    as DQN's Ape-X actors do), `_items_per_batch` (transitions per learner
    call) and `extras_spec` (what each item stores beside the transition,
    e.g. a behaviour policy's logits: then the actor passes them to its
    adders; None stores nothing). A config with `store_frames_once` set
    (Atari's frame stacks) stores each frame once (`FramesOnceNStepAdder`);
    the dataset gives the learner the same transitions.
    """

    table_name = "priority_table"

    @property
    def _defer_items(self) -> bool:
        return False

    @property
    def _items_per_batch(self) -> int:
        return self.config.batch_size

    def extras_spec(self, spec: EnvironmentSpec) -> Any:
        del spec
        return None

    @property
    def _frames_once(self) -> bool:
        return bool(getattr(self.config, "store_frames_once", False))

    def learner_io(self, iterator: Iterator[reverb.ReplaySample], replay_address: str | None,
                   counter: Any = None, logger: Any = None) -> LearnerIO:
        """What the learner reads and writes: `iterator`'s batches (`batches_per_call` a
        call, where the config has it), the table's priorities when prioritized, the
        counter and the logger."""
        return make_learner_io(iterator, replay_address, self.table_name, self.config.prioritized,
                               counter, logger, getattr(self.config, "batches_per_call", 1))

    def make_replay_tables(self, *, spec: EnvironmentSpec) -> list[reverb.Table]:
        c = self.config
        limiter = make_rate_limiter(c.samples_per_insert, c.min_replay_size)
        if self._frames_once:
            if self.extras_spec(spec) is not None:
                raise ValueError("store_frames_once: frames-once items carry no extras; pass "
                                 "--store_frames_once=false")
            signature = frames_once_signature(spec, self.config.n_step)
        else:
            signature = transition_signature(spec, self.extras_spec(spec))
        return [make_replay_table(self.table_name, signature, c.max_replay_size,
                                  limiter, prioritized=c.prioritized,
                                  priority_exponent=c.priority_exponent)]

    def make_dataset_iterator(
        self, *, replay_address: str, should_stop: Callable[[], bool] | None = None
    ) -> Iterator[reverb.ReplaySample]:
        """Batches of transitions; restarts after rate-limiter timeouts, ends on should_stop."""
        return make_batch_iterator(replay_address, self.table_name, self._items_per_batch,
                                   self.config.prefetch_size, should_stop,
                                   transform=(unpack_frames_once(self.config.n_step)
                                              if self._frames_once else None))

    def make_adder(self, *, replay_client: reverb.Client, spec: EnvironmentSpec,
                   num_envs: int) -> BatchedNStepTransitionAdder:
        """The n-step transitions of K lock-stepped environments, in one adder."""
        c = self.config
        if self._frames_once:
            check_frame_stack_spec(spec)
            return FramesOnceNStepAdder(replay_client, self.table_name, num_envs,
                                        n_step=c.n_step, discount=c.discount,
                                        max_in_flight_items=c.max_in_flight_items,
                                        defer_items=self._defer_items)
        return BatchedNStepTransitionAdder(replay_client, self.table_name, num_envs,
                                           n_step=c.n_step, discount=c.discount,
                                           max_in_flight_items=c.max_in_flight_items,
                                           defer_items=self._defer_items,
                                           extras_spec=self.extras_spec(spec))
