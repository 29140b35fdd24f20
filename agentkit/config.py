"""Helpers for validated dataclass configs.

A bad value fails at construction with one line that names the field, which
is also the name of its command-line flag.
"""

from __future__ import annotations

import dataclasses
from typing import Any


class ConfigError(ValueError):
    """A config field holds a value outside what it allows."""


def require(condition: bool, field: str, allowed: str, value: Any) -> None:
    """Raises ConfigError("--field: must be <allowed>, got <value>") unless `condition`."""
    if not condition:
        raise ConfigError(f"--{field}: must be {allowed}, got {value!r}")


def as_dict(config: Any) -> dict[str, Any]:
    """A JSON-friendly dict of a (dataclass) config."""
    result = {}
    for field in dataclasses.fields(config):
        value = getattr(config, field.name)
        result[field.name] = list(value) if isinstance(value, tuple) else value
    return result
