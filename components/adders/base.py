"""The adder interfaces live in the vocabulary (`agentkit.adders`); re-exported here."""

from agentkit.adders import Adder, BatchedAdder

__all__ = ["Adder", "BatchedAdder"]
