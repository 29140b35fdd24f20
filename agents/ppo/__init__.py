"""PPO: synchronous rounds of rollouts, GAE, epochs of clipped-surrogate SGD; A2C is a preset."""

from agents.ppo.builder import A2CBuilder, PPOBuilder
from agents.ppo.config import A2CConfig, PPOConfig
from agents.ppo.learning import PPOLearner

__all__ = ["A2CBuilder", "A2CConfig", "PPOBuilder", "PPOConfig", "PPOLearner"]
