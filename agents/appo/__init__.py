"""APPO: asynchronous PPO, IMPALA's pipeline with the clipped surrogate on V-trace advantages."""

from agents.appo.builder import APPOBuilder
from agents.appo.config import APPOConfig
from agents.appo.learning import APPOLearner

__all__ = ["APPOBuilder", "APPOConfig", "APPOLearner"]
