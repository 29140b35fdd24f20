"""Shared data types."""

from __future__ import annotations

from typing import Any, NamedTuple


class Transition(NamedTuple):
    """An n-step transition (o_tm1, a_tm1, r_t, d_t, o_t, extras).

    `reward` is the discounted n-step return and `discount` the total discount
    (gamma^m times the environment discounts) to apply to the bootstrap value at
    `next_observation`; it is zero when the episode terminated in between. Both
    are nests of the environment reward's structure (float32 scalars for a
    scalar reward). `extras` holds what the actor stored with `action` (e.g.
    behaviour-policy outputs); `()`, a nest without leaves, when it stores
    nothing, so a 5-field Transition(o, a, r, d, o') still builds and items
    without extras keep their five columns.
    """

    observation: Any
    action: Any
    reward: Any
    discount: Any
    next_observation: Any
    extras: Any = ()
