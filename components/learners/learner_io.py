"""What connects a learner to its run: batches in, priorities out, counts and log rows.

Every agent's learner takes one `LearnerIO` instead of the same seven
arguments; `make_learner_io` is what each builder's `make_learner` calls.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

from agentkit.counting import Counter
from agentkit.loggers import Logger


@dataclasses.dataclass
class LearnerIO:
    iterator: Iterator[Any]  # The learner's batches (a tf.data iterator or a Python one).
    replay_client: Any = None  # A reverb.TFClient for priority write-back; None: no writes.
    table: str | None = None  # The table whose priorities it writes.
    counter: Counter | None = None  # Counts learner_steps (None: a counter of its own).
    logger: Logger | None = None  # Metric rows (None: none written).
    batches_per_call: int = 1  # Learner steps per step() call, in one compiled loop.
    log_every_s: float = 1.0  # At most one metric row per this many seconds.

    def __post_init__(self):
        if self.batches_per_call < 1:
            raise ValueError(f"batches_per_call must be >= 1, got {self.batches_per_call}")


def make_learner_io(iterator: Iterator[Any], replay_address: str | None = None,
                    table: str | None = None, write_priorities: bool = False,
                    counter: Counter | None = None, logger: Logger | None = None,
                    batches_per_call: int = 1) -> LearnerIO:
    """A LearnerIO whose priorities go to `table` when `write_priorities` and an address
    is given (tests pass no address: nothing is written back)."""
    client = None
    if write_priorities and replay_address is not None:
        import reverb

        client = reverb.TFClient(replay_address)
    return LearnerIO(iterator, client, table, counter, logger, batches_per_call)
