"""DQN with the Ape-X/Rainbow parts: n-step, double, dueling, prioritized replay."""

from agents.dqn.builder import DQNBuilder
from agents.dqn.config import DQNConfig
from agents.dqn.learning import DQNLearner
from agents.dqn.networks import make_networks

__all__ = ["DQNBuilder", "DQNConfig", "DQNLearner", "make_networks"]
