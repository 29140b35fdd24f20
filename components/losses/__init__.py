"""Losses and return estimators (V-trace, value rescaling...)."""

from components.losses.value_rescaling import signed_hyperbolic, signed_parabolic
from components.losses.vtrace import VTraceReturns, vtrace

__all__ = ["VTraceReturns", "signed_hyperbolic", "signed_parabolic", "vtrace"]
