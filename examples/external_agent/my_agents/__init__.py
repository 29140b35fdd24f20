"""Agents that live outside the agentkit repository (an example package)."""
