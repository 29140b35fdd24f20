"""Rainbow's configuration: DQN's fields plus the distributional and noisy-net parts."""

from __future__ import annotations

import dataclasses

from agentkit.config import require
from agents.dqn.config import DQNConfig


@dataclasses.dataclass
class RainbowConfig(DQNConfig):
    """Hyperparameters of Rainbow (Hessel et al. 2018). Defaults suit small tasks (CartPole);
    `RainbowConfig.atari()` gives the paper's Atari settings.

    Each part can be turned off for an ablation: `--num_atoms=1` (scalar Q with
    DQN's Huber loss), `--noisy=false` (epsilon-greedy with DQN's epsilon flags),
    `--dueling=false`, `--double_q=false`, `--n_step=1`, `--prioritized=false`.
    """

    # Distributional Q (C51): returns on num_atoms atoms evenly spaced over [v_min, v_max].
    num_atoms: int = 51  # 1: a scalar Q-value and DQN's loss (the ablation).
    v_min: float = 0.0  # Lowest atom (CartPole's returns are >= 0).
    v_max: float = 100.0  # Highest atom (CartPole's discounted returns stay below 1 / (1 - 0.99)).
    # Noisy nets: the head's linear layers are factorised Gaussian noisy layers.
    noisy: bool = True  # Explore by the noise (epsilon 0); false: epsilon-greedy.
    sigma0: float = 0.5  # Initial noise scale (sigma = sigma0 / sqrt(fan-in)).
    # Rainbow's priorities are its loss, which an actor cannot compute without the target
    # network: new items get priority 1 (about the loss of a fresh item) unless this is set.
    actor_priorities: bool = False

    def __post_init__(self):
        super().__post_init__()
        require(self.num_atoms >= 1, "num_atoms", ">= 1", self.num_atoms)
        require(self.v_min < self.v_max, "v_max", f"> v_min ({self.v_min})", self.v_max)
        require(self.sigma0 > 0, "sigma0", "> 0", self.sigma0)
        require(not (self.actor_priorities and self.num_atoms > 1), "actor_priorities",
                "false with num_atoms > 1 (the priority is the distributional loss)",
                self.actor_priorities)

    @classmethod
    def classic_control(cls, **overrides) -> RainbowConfig:
        """DQN's classic-control settings with epsilon-greedy exploration in place of the noisy
        head, a rate of 2e-3 and 8 samples per insert (its distributional step costs 1.6x
        DQN's: half the updates per step keep the actors' pace).
        (Measured: docs/benchmarks.md, "Figures behind the presets".)"""
        values = dict(noisy=False, learning_rate=2e-3, samples_per_insert=8.0)
        values.update(overrides)
        return super().classic_control(**values)

    @classmethod
    def atari(cls, **overrides) -> RainbowConfig:
        """The Rainbow paper's Atari settings (its Table 1), in agent steps of 4 frames."""
        values = dict(
            discount=0.99, n_step=3, target_update_period=8_000, torso="atari",
            batch_size=32, learning_rate=6.25e-5, adam_epsilon=1.5e-4, learning_rate_decay_steps=0,
            samples_per_insert=8.0, min_replay_size=20_000, max_replay_size=1_000_000,
            priority_exponent=0.5, importance_sampling_exponent=0.4, num_atoms=51, v_min=-10.0,
            v_max=10.0, noisy=True, sigma0=0.5, epsilon_eval=0.001, variable_update_period=400,
            store_frames_once=True,
        )
        values.update(overrides)
        return cls(**values)
