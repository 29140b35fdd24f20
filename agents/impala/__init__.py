"""IMPALA: actors send unrolls with their behaviour logits; a V-trace learner corrects the lag."""

from agents.impala.builder import IMPALABuilder
from agents.impala.config import IMPALAConfig

__all__ = ["IMPALABuilder", "IMPALAConfig"]
