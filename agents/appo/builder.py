"""APPO's builder: IMPALA's (actors that never wait, a queue of unrolls) with APPO's loss."""

from __future__ import annotations

from typing import Any

from agentkit.builders import Networks
from agentkit.specs import EnvironmentSpec
from agents.appo.config import APPOConfig
from agents.appo.learning import APPOLearner
from agents.impala import IMPALABuilder


class APPOBuilder(IMPALABuilder):
    """IMPALA's queue, adders, policies and actors; APPO's learner."""

    config_class = APPOConfig
    learner_class = APPOLearner

    def _learner_kwargs(self, networks: Networks, spec: EnvironmentSpec) -> dict[str, Any]:
        return dict(super()._learner_kwargs(networks, spec), clip_epsilon=self.config.clip_epsilon,
                    normalize_advantages=self.config.normalize_advantages,
                    epochs_per_batch=self.config.num_epochs)
