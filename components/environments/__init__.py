"""Environments: adapters to dm_env, wrappers, and the `--env` name registry."""

from components.environments.batched import BatchedEnvironment, EnvironmentFailure
from components.environments.families import (
    FAMILIES,
    environment_family,
    family_preset,
    family_program_preset,
)
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
    "FAMILIES",
    "BatchedEnvironment",
    "EnvironmentFailure",
    "GymnasiumToDmEnv",
    "SinglePrecisionWrapper",
    "UnknownEnvironmentError",
    "environment_family",
    "family_preset",
    "family_program_preset",
    "make_environment",
    "make_vector_environment",
]
