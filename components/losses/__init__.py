"""Losses and return estimators (V-trace, value rescaling, categorical projection...)."""

from components.losses.distributional import categorical_double_q_loss, categorical_projection
from components.losses.gae import generalized_advantage_estimation
from components.losses.masked import masked_mean
from components.losses.policy_gradient import clipped_surrogate_loss
from components.losses.value_rescaling import signed_hyperbolic, signed_parabolic
from components.losses.vtrace import VTraceReturns, vtrace

__all__ = ["VTraceReturns", "categorical_double_q_loss", "categorical_projection",
           "clipped_surrogate_loss", "generalized_advantage_estimation", "masked_mean",
           "signed_hyperbolic", "signed_parabolic", "vtrace"]
