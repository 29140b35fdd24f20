"""Losses and return estimators (V-trace, value rescaling, categorical projection...)."""

from components.losses.distributional import categorical_projection
from components.losses.value_rescaling import signed_hyperbolic, signed_parabolic
from components.losses.vtrace import VTraceReturns, vtrace

__all__ = ["VTraceReturns", "categorical_projection", "signed_hyperbolic", "signed_parabolic",
           "vtrace"]
