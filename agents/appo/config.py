"""APPO's configuration: IMPALA's fields plus the clipped surrogate's."""

from __future__ import annotations

import dataclasses

from agentkit.config import require
from agents.impala.config import IMPALAConfig


@dataclasses.dataclass
class APPOConfig(IMPALAConfig):
    """Hyperparameters of APPO (asynchronous PPO, Sample Factory's): IMPALA's pipeline and
    V-trace, with PPO's clipped surrogate in place of the plain policy gradient."""

    clip_epsilon: float = 0.2  # The surrogate clips pi / mu to [1 - epsilon, 1 + epsilon].
    normalize_advantages: bool = True  # Advantages scaled to mean 0, std 1 in each batch.

    def __post_init__(self):
        super().__post_init__()
        require(0.0 < self.clip_epsilon < 1.0, "clip_epsilon", "in (0, 1)", self.clip_epsilon)
