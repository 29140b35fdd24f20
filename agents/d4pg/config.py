"""D4PG's configuration: every default commented, every field validated."""

from __future__ import annotations

import dataclasses

from agentkit.config import require, require_common_fields, require_replay_fields


@dataclasses.dataclass
class D4PGConfig:
    """Hyperparameters of D4PG. Defaults suit small control tasks (Pendulum)."""

    # Returns and targets.
    discount: float = 0.99  # gamma.
    n_step: int = 5  # Length of the n-step return.
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
    batch_size: int = 256  # Transitions per learner step.
    policy_learning_rate: float = 3e-4  # Adam step size of the policy.
    critic_learning_rate: float = 3e-4  # Adam step size of the critic.
    max_gradient_norm: float = 40.0  # Global-norm clipping, each network on its own.
    # Batches (each sampled and learned from) per learner call, run in one
    # compiled loop: the same steps as that many calls, without the Python between them.
    batches_per_call: int = 1

    # Replay.
    samples_per_insert: float = 32.0  # Items sampled per item inserted (0: no ratio).
    min_replay_size: int = 1_000  # Items in the table before the learner may sample.
    max_replay_size: int = 1_000_000  # Oldest items are removed beyond this.
    prioritized: bool = False  # Prioritized sampling (by critic loss) instead of uniform.
    priority_exponent: float = 0.6  # alpha.
    importance_sampling_exponent: float = 0.4  # beta.
    prefetch_size: int = 4  # Batches prefetched by the dataset.

    # Acting.
    sigma: float = 0.3  # Std of the Gaussian exploration noise, in half action ranges.
    variable_update_period: int = 100  # Actor steps between weight fetches.
    max_in_flight_items: int = 8  # Items an adder may have unconfirmed by the server.

    def __post_init__(self):
        require_common_fields(self)
        self.policy_hidden_sizes = tuple(int(h) for h in self.policy_hidden_sizes)
        self.critic_hidden_sizes = tuple(int(h) for h in self.critic_hidden_sizes)
        require(0.0 <= self.discount <= 1.0, "discount", "in [0, 1]", self.discount)
        require(self.n_step >= 1, "n_step", ">= 1", self.n_step)
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
        require(self.batch_size >= 1, "batch_size", ">= 1", self.batch_size)
        require(self.policy_learning_rate > 0, "policy_learning_rate", "> 0",
                self.policy_learning_rate)
        require(self.critic_learning_rate > 0, "critic_learning_rate", "> 0",
                self.critic_learning_rate)
        require_replay_fields(self)
        require(self.sigma >= 0, "sigma", ">= 0", self.sigma)

    @classmethod
    def control(cls, **overrides) -> D4PGConfig:
        """DeepMind Control Suite tasks: rewards in [0, 1] a step, so values up to 100 over
        1,000 steps; the distributional critic's support widened to [-150, 150]."""
        values = dict(v_min=-150.0, v_max=150.0)
        values.update(overrides)
        return cls(**values)
