"""SAC's configuration: every default commented, every field validated."""

from __future__ import annotations

import dataclasses

from agentkit.config import require
from components.replay import NStepReplayConfig


@dataclasses.dataclass
class SACConfig(NStepReplayConfig):
    """Hyperparameters of SAC (Haarnoja et al. 2018, with the temperature tuned). Defaults
    are stable-baselines3's SAC defaults: one gradient step per environment step. The
    replay fields (discount, batch_size, the table) are NStepReplayConfig's."""

    # Returns and targets.
    n_step: int = 1  # Length of the n-step return (1: SAC's one-step soft TD target).
    target_update_tau: float = 0.005  # Polyak rate of both target critics, every step.
    target_update_period: int = 1  # Learner steps between target updates.

    # Networks (ReLU MLPs).
    policy_hidden_sizes: tuple[int, ...] = (256, 256)  # Policy layers.
    critic_hidden_sizes: tuple[int, ...] = (256, 256)  # Each critic's layers (on [o, a]).

    # Optimisation (Adam).
    policy_learning_rate: float = 3e-4  # Adam step size of the policy.
    critic_learning_rate: float = 3e-4  # Adam step size of both critics.
    temperature_learning_rate: float = 3e-4  # Adam step size of log(alpha).
    initial_temperature: float = 1.0  # alpha at the start (stable-baselines3's "auto").
    # The entropy the temperature steers towards, in nats per action dimension (SAC's -1).
    target_entropy_per_dimension: float = -1.0
    max_gradient_norm: float = 1e6  # Global-norm clipping per loss term (SAC clips none).
    # Batches (each sampled and learned from) per learner call, run in one compiled loop.
    batches_per_call: int = 1

    # Replay: one gradient step of 256 per environment step.
    samples_per_insert: float = 256.0  # Items sampled per item inserted: one step a step.
    min_replay_size: int = 256  # Items in the table before the learner may sample.

    # Acting.
    variable_update_period: int = 1  # Actor steps between weight fetches.

    def __post_init__(self):
        super().__post_init__()
        self.policy_hidden_sizes = tuple(int(h) for h in self.policy_hidden_sizes)
        self.critic_hidden_sizes = tuple(int(h) for h in self.critic_hidden_sizes)
        require(0.0 < self.target_update_tau <= 1.0, "target_update_tau", "in (0, 1]",
                self.target_update_tau)
        require(self.target_update_period >= 1, "target_update_period", ">= 1",
                self.target_update_period)
        for name in ("policy_hidden_sizes", "critic_hidden_sizes"):
            sizes = getattr(self, name)
            require(len(sizes) > 0 and min(sizes) >= 1, name,
                    "a non-empty list of positive integers", sizes)
        for name in ("policy_learning_rate", "critic_learning_rate",
                     "temperature_learning_rate", "initial_temperature", "max_gradient_norm"):
            require(getattr(self, name) > 0, name, "> 0", getattr(self, name))

    @classmethod
    def classic_control(cls, **overrides) -> SACConfig:
        """Pendulum and its kin: rl-baselines3-zoo's tuned SAC for Pendulum-v1 (learning rate
        1e-3, the rest SAC's defaults)."""
        values = dict(policy_learning_rate=1e-3, critic_learning_rate=1e-3,
                      temperature_learning_rate=1e-3)
        values.update(overrides)
        return cls(**values)

    @classmethod
    def control(cls, **overrides) -> SACConfig:
        """DeepMind Control Suite tasks: SAC's defaults (the paper's and Acme's: 256x256,
        3e-4, one update a step), a 10k-step warm-up of the table before learning."""
        values = dict(min_replay_size=10_000)
        values.update(overrides)
        return cls(**values)
