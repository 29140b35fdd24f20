"""agents: one folder per agent, each composing components into a builder."""
