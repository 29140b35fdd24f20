"""D4PG's configuration: every default commented, every field validated."""

from __future__ import annotations

import dataclasses

from agentkit.config import require
from components.replay import NStepReplayConfig


@dataclasses.dataclass
class D4PGConfig(NStepReplayConfig):
    """Hyperparameters of D4PG. Defaults suit small control tasks (Pendulum). The replay
    fields (discount, n_step, batch_size, the table) are NStepReplayConfig's."""

    # Returns and targets.
    v_min: float = -1500.0  # Lowest atom of the critic's support.
    v_max: float = 100.0  # Highest atom.
    num_atoms: int = 51  # Atoms of the categorical value distribution.
    target_update_period: int = 100  # Learner steps between target copies (if tau is 0).
    target_update_tau: float = 0.005  # If > 0: Polyak-average both targets every step.

    # Networks.
    policy_hidden_sizes: tuple[int, ...] = (256, 256)  # Policy MLP layers.
    critic_hidden_sizes: tuple[int, ...] = (256, 256)  # Critic MLP layers (on [o, a]).
    layer_norm: bool = True  # LayerNormMLP torsos (Acme's), near-zero policy output layer.

    # Optimisation.
    policy_learning_rate: float = 3e-4  # Adam step size of the policy.
    critic_learning_rate: float = 3e-4  # Adam step size of the critic.
    max_gradient_norm: float = 40.0  # Global-norm clipping, each network on its own.
    # Batches (each sampled and learned from) per learner call, run in one
    # compiled loop: the same steps as that many calls, without the Python between them.
    batches_per_call: int = 1

    # Acting.
    sigma: float = 0.3  # Std of the Gaussian exploration noise, in half action ranges.
    variable_update_period: int = 100  # Actor steps between weight fetches.

    def __post_init__(self):
        super().__post_init__()
        self.policy_hidden_sizes = tuple(int(h) for h in self.policy_hidden_sizes)
        self.critic_hidden_sizes = tuple(int(h) for h in self.critic_hidden_sizes)
        require(self.v_min < self.v_max, "v_max", f"> v_min ({self.v_min})", self.v_max)
        require(self.num_atoms >= 2, "num_atoms", ">= 2", self.num_atoms)
        require(self.target_update_period >= 1, "target_update_period", ">= 1",
                self.target_update_period)
        require(0.0 <= self.target_update_tau <= 1.0, "target_update_tau", "in [0, 1]",
                self.target_update_tau)
        for name in ("policy_hidden_sizes", "critic_hidden_sizes"):
            sizes = getattr(self, name)
            require(len(sizes) > 0 and min(sizes) >= 1, name,
                    "a non-empty list of positive integers", sizes)
        require(self.policy_learning_rate > 0, "policy_learning_rate", "> 0",
                self.policy_learning_rate)
        require(self.critic_learning_rate > 0, "critic_learning_rate", "> 0",
                self.critic_learning_rate)
        require(self.sigma >= 0, "sigma", ">= 0", self.sigma)

    @classmethod
    def control(cls, **overrides) -> D4PGConfig:
        """DeepMind Control Suite tasks: rewards in [0, 1] a step, so values up to 100 over
        1,000 steps; the distributional critic's support widened to [-150, 150]."""
        values = dict(v_min=-150.0, v_max=150.0)
        values.update(overrides)
        return cls(**values)
