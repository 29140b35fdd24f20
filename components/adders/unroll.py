"""The unroll adder (IMPALA): unrolls of T actions plus the observation to bootstrap from.

An unroll is a sequence of T + 1 steps written every T steps (see
`components.adders.sequence`): item k covers steps kT..kT+T, consecutive
unrolls share one step, and every action is learned from exactly once.
"""

from __future__ import annotations

from typing import Any

import reverb

from components.adders.sequence import SequenceAdder, sequence_signature


class UnrollAdder(SequenceAdder):
    """Writes unrolls of `unroll_length` actions (T + 1 steps) to `table`."""

    def __init__(self, client: reverb.Client, table: str, unroll_length: int, extras_spec: Any,
                 max_in_flight_items: int = 1):
        if unroll_length < 1:
            raise ValueError(f"unroll_length must be >= 1, got {unroll_length}")
        super().__init__(client, table, sequence_length=unroll_length + 1, period=unroll_length,
                         extras_spec=extras_spec, max_in_flight_items=max_in_flight_items)


def unroll_signature(spec, unroll_length: int, extras_spec: Any) -> dict:
    """The signature of UnrollAdder items for an environment spec."""
    return sequence_signature(spec, unroll_length + 1, extras_spec)
