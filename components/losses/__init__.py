"""Losses and return estimators (V-trace...)."""

from components.losses.vtrace import VTraceReturns, vtrace

__all__ = ["VTraceReturns", "vtrace"]
