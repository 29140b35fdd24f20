"""Shared data types."""

from __future__ import annotations

from typing import Any, NamedTuple


class Transition(NamedTuple):
    """An n-step transition (o_tm1, a_tm1, r_t, d_t, o_t).

    `reward` is the discounted n-step return and `discount` the total discount
    (gamma^m times the environment discounts) to apply to the bootstrap value at
    `next_observation`; it is zero when the episode terminated in between.
    """

    observation: Any
    action: Any
    reward: Any
    discount: Any
    next_observation: Any
