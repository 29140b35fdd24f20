"""agentkit: the vocabulary of the toolkit (interfaces, specs, loops, counters, loggers)."""
