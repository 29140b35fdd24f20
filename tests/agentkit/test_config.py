"""The checks every agent's config shares: each bad value fails naming its flag."""

from __future__ import annotations

import dataclasses
import re

import pytest

from agentkit.config import (
    AT_LEAST_ONE_FIELDS,
    NON_NEGATIVE_FIELDS,
    POSITIVE_FIELDS,
    ConfigError,
)
from launch_programs.registry import AGENTS, get_agent

BAD = ([(name, 0.0, "> 0") for name in POSITIVE_FIELDS]
       + [(name, -1, ">= 0") for name in NON_NEGATIVE_FIELDS]
       + [(name, 0, ">= 1") for name in AT_LEAST_ONE_FIELDS]
       + [("max_in_flight_items", 41, "<= 40 (Reverb warns from 50 unconfirmed items)")])


@pytest.mark.parametrize("agent", sorted(AGENTS))
def test_shared_fields_are_checked_in_every_agent_config(agent):
    config_class = get_agent(agent).config_class
    fields = {f.name for f in dataclasses.fields(config_class)}
    checked = 0
    for name, value, allowed in BAD:
        if name not in fields:
            continue
        with pytest.raises(ConfigError,
                           match=f"^--{name}: must be {re.escape(allowed)}, got {value!r}$"):
            config_class(**{name: value})
        checked += 1
    assert checked >= 4  # Every agent has a learning rate, a norm, a period and more.
