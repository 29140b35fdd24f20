"""Helpers for validated dataclass configs.

A bad value fails at construction with one line that names the field, which
is also the name of its command-line flag.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from typing import Any

from agentkit.adders import MAX_IN_FLIGHT_ITEMS, PENDING_ITEMS_LIMIT


class ConfigError(ValueError):
    """A config field holds a value outside what it allows."""


def require(condition: bool, field: str, allowed: str, value: Any) -> None:
    """Raises ConfigError("--field: must be <allowed>, got <value>") unless `condition`."""
    if not condition:
        raise ConfigError(f"--{field}: must be {allowed}, got {value!r}")


def _is_finite(value: Any) -> bool:
    """False only for a non-integral number that is nan or infinite (strings, None: True)."""
    if isinstance(value, numbers.Integral) or not isinstance(value, numbers.Real):
        return True
    return math.isfinite(value)


def _infinities(default: Any) -> set[float]:
    """The infinities a field's default holds (inf meaning "no limit"): those it may be given."""
    values = default if isinstance(default, (tuple, list)) else (default,)
    return {v for v in values if isinstance(v, numbers.Real) and math.isinf(v)}


def require_finite_floats(config: Any) -> None:
    """Every number a dataclass config holds is finite: a field (or an element of a tuple or
    list field) given nan, inf or -inf fails naming it, with one message, before the
    field's own checks (a field with no range check, or one read as "< 0: off", would
    otherwise pass nan on to the learner, which fails only at its first step).

    Checked by value, so float fields, `float | None` fields, tuples of floats and an int
    field given a float in Python are all covered. A field whose default is itself infinite
    (inf meaning "no limit") keeps accepting that infinity; nan is refused everywhere.
    """
    for field in dataclasses.fields(config):
        value = getattr(config, field.name)
        if field.default is not dataclasses.MISSING:
            allowed = _infinities(field.default)
        elif field.default_factory is not dataclasses.MISSING:
            allowed = _infinities(field.default_factory())
        else:
            allowed = set()
        extra = "".join(f" or {v}" for v in sorted(allowed))
        if isinstance(value, (tuple, list)):
            ok = all(_is_finite(v) or v in allowed for v in value)
            require(ok, field.name, f"a list of finite numbers{extra}", value)
        else:
            require(_is_finite(value) or value in allowed, field.name,
                    f"a finite number{extra}", value)


# The learning fields most agents share, by what each must satisfy.
POSITIVE_FIELDS = ("learning_rate", "adam_epsilon", "max_gradient_norm")
NON_NEGATIVE_FIELDS = ("learning_rate_final", "learning_rate_decay_steps")
AT_LEAST_ONE_FIELDS = ("batches_per_call", "variable_update_period", "max_in_flight_items")
# The agents' table sizes (the replay's, the unroll queue's), and all of their size fields:
# Reverb's sizes are C ints, and a larger one fails inside its constructor.
MAX_TABLE_SIZE_FIELDS = ("max_replay_size", "max_queue_size")
TABLE_SIZE_FIELDS = MAX_TABLE_SIZE_FIELDS + ("min_replay_size",)
MAX_TABLE_SIZE = 2**31 - 1


def require_common_fields(config: Any) -> None:
    """The checks of the fields agents share, for each such field the config has:
    every number finite (`require_finite_floats`, first: every agent's config comes
    through here); rates, epsilons and norms > 0; final rates and decay steps >= 0;
    periods and counts >= 1."""
    require_finite_floats(config)
    checks = ((POSITIVE_FIELDS, "> 0", lambda v: v > 0),
              (NON_NEGATIVE_FIELDS, ">= 0", lambda v: v >= 0),
              (AT_LEAST_ONE_FIELDS, ">= 1", lambda v: v >= 1))
    for names, allowed, condition in checks:
        for name in names:
            if hasattr(config, name):
                value = getattr(config, name)
                require(condition(value), name, allowed, value)
    for name in TABLE_SIZE_FIELDS:
        if hasattr(config, name):
            require(getattr(config, name) <= MAX_TABLE_SIZE, name,
                    f"<= {MAX_TABLE_SIZE:,} (Reverb's largest table)", getattr(config, name))
    if hasattr(config, "max_in_flight_items"):
        warns = PENDING_ITEMS_LIMIT + 1
        require(config.max_in_flight_items <= MAX_IN_FLIGHT_ITEMS, "max_in_flight_items",
                f"<= {MAX_IN_FLIGHT_ITEMS} (Reverb warns from {warns} unconfirmed items)",
                config.max_in_flight_items)


def require_replay_fields(config: Any) -> None:
    """The replay fields agents share: samples_per_insert, min/max_replay_size against
    batch_size, priority and importance-sampling exponents, prefetch_size."""
    c = config
    require(c.samples_per_insert >= 0, "samples_per_insert", ">= 0", c.samples_per_insert)
    require(c.min_replay_size >= c.batch_size, "min_replay_size",
            f">= batch_size ({c.batch_size})", c.min_replay_size)
    require(c.max_replay_size >= c.min_replay_size, "max_replay_size",
            f">= min_replay_size ({c.min_replay_size})", c.max_replay_size)
    require(c.priority_exponent >= 0, "priority_exponent", ">= 0", c.priority_exponent)
    require(0 <= c.importance_sampling_exponent <= 1, "importance_sampling_exponent",
            "in [0, 1]", c.importance_sampling_exponent)
    require(c.prefetch_size >= 0, "prefetch_size", ">= 0", c.prefetch_size)


def field_values(config: Any) -> dict[str, Any]:
    """Every field of a dataclass config by name (a preset made from a whole config)."""
    return {field.name: getattr(config, field.name) for field in dataclasses.fields(config)}


def as_dict(config: Any) -> dict[str, Any]:
    """A JSON-friendly dict of a (dataclass) config."""
    result = {}
    for field in dataclasses.fields(config):
        value = getattr(config, field.name)
        result[field.name] = list(value) if isinstance(value, tuple) else value
    return result
