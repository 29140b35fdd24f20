"""The adder interfaces live in the vocabulary (`agentkit.adders`); re-exported here."""

from agentkit.adders import PENDING_ITEMS_LIMIT, Adder, BatchedAdder

__all__ = ["PENDING_ITEMS_LIMIT", "Adder", "BatchedAdder"]
