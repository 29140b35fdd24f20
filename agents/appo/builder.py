"""APPO's builder: IMPALA's (actors that never wait, a queue of unrolls) with APPO's loss."""

from __future__ import annotations

from typing import Any

from agentkit.builders import Networks
from agentkit.config import field_values
from agentkit.specs import EnvironmentSpec
from agents.appo.config import APPOConfig
from agents.appo.learning import APPOLearner
from agents.impala import IMPALABuilder
from components.environments import environment_family


class APPOBuilder(IMPALABuilder):
    """IMPALA's queue, adders, policies and actors; APPO's learner."""

    config_class = APPOConfig
    learner_class = APPOLearner

    @classmethod
    def preset(cls, env: str) -> dict[str, Any]:
        family = environment_family(env)
        if family == "atari":
            return field_values(APPOConfig.atari())
        if family == "classic_control":
            return field_values(APPOConfig.classic_control())
        return {}

    @classmethod
    def program_preset(cls, env: str) -> dict[str, Any]:
        """Classic control: IMPALA's one actor of 8 environments (a batch of the preset is one
        unroll of each), the first evaluation at 5,000 steps."""
        if environment_family(env) == "classic_control":
            return {"num_actors": 1, "num_envs_per_actor": 8, "eval_at_start": False}
        return {}

    def _learner_kwargs(self, networks: Networks, spec: EnvironmentSpec) -> dict[str, Any]:
        return dict(super()._learner_kwargs(networks, spec), clip_epsilon=self.config.clip_epsilon,
                    normalize_advantages=self.config.normalize_advantages,
                    epochs_per_batch=self.config.num_epochs)
