"""The config fields `NStepTransitionReplay` reads, as a dataclass an agent's config inherits.

An agent whose builder inherits the n-step replay parts gets their fields, their comments
(its `--help`) and their checks by inheriting this class; it redeclares a field to give it
another default (SAC: n_step 1), and calls `super().__post_init__()` from its own.
"""

from __future__ import annotations

import dataclasses

from agentkit.config import require, require_common_fields, require_replay_fields


@dataclasses.dataclass
class NStepReplayConfig:
    """Returns, batches and the replay table of an n-step transition agent."""

    discount: float = 0.99  # gamma.
    n_step: int = 5  # Length of the n-step return.
    batch_size: int = 256  # Transitions per learner step.
    samples_per_insert: float = 32.0  # Items sampled per item inserted (0: no ratio).
    min_replay_size: int = 1_000  # Items in the table before the learner may sample.
    max_replay_size: int = 1_000_000  # Oldest items are removed beyond this.
    prioritized: bool = False  # Prioritized sampling (by the learner's priorities) instead of uniform.
    priority_exponent: float = 0.6  # alpha of prioritized replay.
    importance_sampling_exponent: float = 0.4  # beta.
    prefetch_size: int = 4  # Batches prefetched by the dataset.
    max_in_flight_items: int = 8  # Items an adder may have unconfirmed by the server.

    def __post_init__(self):
        require_common_fields(self)
        require(0.0 <= self.discount <= 1.0, "discount", "in [0, 1]", self.discount)
        require(self.n_step >= 1, "n_step", ">= 1", self.n_step)
        require(self.batch_size >= 1, "batch_size", ">= 1", self.batch_size)
        require_replay_fields(self)
