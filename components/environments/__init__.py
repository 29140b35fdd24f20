"""Environments: adapters to dm_env, wrappers, and the `--env` name registry."""

from components.environments.batched import BatchedEnvironment, EnvironmentFailure
from components.environments.gym_adapter import GymnasiumToDmEnv
from components.environments.registry import (
    ENVIRONMENT_KINDS,
    UnknownEnvironmentError,
    make_environment,
    make_vector_environment,
)
from components.environments.wrappers import SinglePrecisionWrapper

__all__ = [
    "ENVIRONMENT_KINDS",
    "BatchedEnvironment",
    "EnvironmentFailure",
    "GymnasiumToDmEnv",
    "SinglePrecisionWrapper",
    "UnknownEnvironmentError",
    "make_environment",
    "make_vector_environment",
]
