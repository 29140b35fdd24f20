"""DQN with one fixed exploration rate and a small network: a new agent with no edit in the repo.

It reuses everything of DQN (replay, adders, learner) and changes two things:
its config adds `epsilon` and shrinks the default network, and its builder
makes actors that explore with that fixed epsilon instead of a decaying one.
Run it with `--agent=my_agents.greedy_dqn:GreedyDQNBuilder` (README.md).
"""

from __future__ import annotations

import dataclasses

from agentkit.builders import Networks
from agentkit.config import require
from agentkit.specs import EnvironmentSpec
from agents.dqn import DQNBuilder, DQNConfig
from components.actors import EpsilonGreedyPolicy


@dataclasses.dataclass
class GreedyDQNConfig(DQNConfig):
    """DQN's fields (each a flag), a fixed epsilon, and defaults for small tasks."""

    # Redefined fields keep their place among DQN's flags, with these defaults.
    hidden_sizes: tuple[int, ...] = (64, 64)  # MLP torso layers (smaller than DQN's).
    head_hidden_size: int = 64  # Hidden layer of the (dueling) head; 0 for none.
    epsilon: float = 0.05  # Every actor's exploration rate, fixed from the first step.

    def __post_init__(self):
        super().__post_init__()
        require(0.0 <= self.epsilon <= 1.0, "epsilon", "in [0, 1]", self.epsilon)


class GreedyDQNBuilder(DQNBuilder):
    """DQN's builder, except that actors explore with `config.epsilon`, unscheduled."""

    config_class = GreedyDQNConfig

    def make_policy(self, *, networks: Networks, spec: EnvironmentSpec,
                    evaluation: bool = False, seed: int = 0, actor_id: int = 0,
                    num_actors: int = 1) -> EpsilonGreedyPolicy:
        epsilon = self.config.epsilon_eval if evaluation else self.config.epsilon
        return EpsilonGreedyPolicy(networks["q"], spec, epsilon, epsilon, 0, seed)


def make_builder() -> type[GreedyDQNBuilder]:
    """The factory form: `--agent=my_agents.greedy_dqn:make_builder` names the same agent."""
    return GreedyDQNBuilder
