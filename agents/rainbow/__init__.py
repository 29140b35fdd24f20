"""Rainbow: distributional, noisy, dueling, double, n-step, prioritized Q-learning."""

from agents.rainbow.builder import RainbowBuilder
from agents.rainbow.config import RainbowConfig
from agents.rainbow.learning import RainbowLearner
from agents.rainbow.networks import RainbowNetwork, make_networks

__all__ = ["RainbowBuilder", "RainbowConfig", "RainbowLearner", "RainbowNetwork", "make_networks"]
