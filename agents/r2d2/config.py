"""R2D2's configuration: every default commented, every field validated."""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

from agentkit.config import require, require_common_fields, require_replay_fields
from components.networks.precision import COMPUTE_DTYPES
from components.networks.torso import TORSOS


@dataclasses.dataclass
class R2D2Config:
    """Hyperparameters of R2D2. Defaults suit small tasks (CartPole without
    velocities, short memory tasks); `R2D2Config.atari()` gives the paper's."""

    # Sequences (counted in environment steps).
    sequence_length: int = 20  # L: steps per replayed sequence.
    period: int = 10  # P: a new sequence every P steps (overlap L - P).
    burn_in: int = 5  # B: leading steps that only rebuild the core state (no gradient).

    # Returns and targets.
    discount: float = 0.99  # gamma.
    n_step: int = 5  # Length of the n-step double-Q return.
    value_rescaling_eps: float = 1e-3  # eps of h(x) = sign(x)(sqrt(|x|+1)-1) + eps x.
    target_update_period: int = 200  # Learner steps between target network copies.

    # Network: torso -> LSTM -> (dueling) head.
    torso: str = "auto"  # "mlp", "atari" (Nature CNN), "atari_shallow" (16/32), "minatar", or "auto".
    # The Atari torsos' convolutions: "bfloat16" on float32 weights, "auto" bfloat16 where
    # the CPU has AMX or AVX-512 BF16 and float32 elsewhere (components.networks.precision).
    compute_dtype: str = "float32"
    # A Linear + ReLU layer of this many units between the torso and the LSTM (0: none): the
    # 16/32 torso's 2,592 features would otherwise enter the LSTM's four gates at every step.
    torso_features: int = 0
    hidden_sizes: tuple[int, ...] = (128,)  # MLP torso layers.
    lstm_size: int = 128  # LSTM core units.
    dueling: bool = True  # Dueling value/advantage head.
    head_hidden_size: int = 128  # Hidden layer of the head; 0 for none.

    # Optimisation.
    batch_size: int = 32  # Sequences per learner step.
    learning_rate: float = 1e-3  # Adam step size.
    learning_rate_final: float = 2.5e-5  # Rate at the end of the decay.
    learning_rate_decay_steps: int = 10_000  # Learner steps of linear decay (0: constant rate).
    adam_epsilon: float = 1e-3  # Adam's denominator floor (the paper's 1e-3).
    max_gradient_norm: float = 40.0  # Global-norm gradient clipping.
    # Batches (each sampled, learned from and its priorities written) per
    # learner call, run in one compiled loop: the same steps as that many
    # calls, without the Python between them.
    batches_per_call: int = 1

    # Replay (counted in sequences).
    samples_per_insert: float = 32.0  # Sequences sampled per sequence inserted (0: no ratio).
    min_replay_size: int = 200  # Sequences in the table before the learner may sample.
    max_replay_size: int = 10_000  # Oldest sequences are removed beyond this.
    priority_exponent: float = 0.9  # alpha.
    importance_sampling_exponent: float = 0.6  # beta.
    max_priority_weight: float = 0.9  # eta: priority = eta max|td| + (1 - eta) mean|td|.
    prefetch_size: int = 2  # Batches prefetched by the dataset.

    # Acting.
    epsilon_base: float = 0.4  # Ape-X: actor i of N explores with base^(1 + alpha i / (N - 1)).
    epsilon_alpha: float = 7.0  # Ape-X: how fast exploration falls from actor 0 to actor N-1.
    # Ape-X's epsilons over every environment of the program, not every actor: row r of
    # actor a's calls is environment a * R + r of N * R (R environments a call), so one
    # batched actor of 16 games explores from 0.4 down to 0.4^8 as 16 Ape-X actors would.
    epsilon_per_environment: bool = False
    epsilon_eval: float = 0.0  # The evaluator's epsilon (greedy).
    variable_update_period: int = 100  # Actor steps between weight fetches.
    max_in_flight_items: int = 4  # Sequences an adder may have unconfirmed by the server.

    # The acting layout and other program flags by family, beside the config values of the
    # classmethods below (agentkit.presets). Atari: one actor of 16 games in ale-py's C++
    # threads, two alternating groups (each with its own recurrent states); 10 evaluation
    # games every 100k steps (DQN's rounds).
    program_presets: ClassVar[dict[str, dict[str, Any]]] = {
        "atari": {"num_actors": 1, "num_envs_per_actor": 16, "env_groups": 2,
                  "atari_vector_env": True, "eval_every": 100_000},
    }

    def __post_init__(self):
        require_common_fields(self)
        self.hidden_sizes = tuple(int(h) for h in self.hidden_sizes)
        require(self.sequence_length >= 2, "sequence_length", ">= 2", self.sequence_length)
        require(1 <= self.period <= self.sequence_length, "period",
                f"in [1, sequence_length ({self.sequence_length})]", self.period)
        require(0 <= self.burn_in <= self.sequence_length - 2, "burn_in",
                f"in [0, sequence_length - 2 ({self.sequence_length - 2})]", self.burn_in)
        require(0.0 <= self.discount <= 1.0, "discount", "in [0, 1]", self.discount)
        require(self.n_step >= 1, "n_step", ">= 1", self.n_step)
        require(self.value_rescaling_eps >= 0, "value_rescaling_eps", ">= 0",
                self.value_rescaling_eps)
        require(self.target_update_period >= 1, "target_update_period", ">= 1",
                self.target_update_period)
        require(self.torso in TORSOS, "torso", "one of " + ", ".join(TORSOS), self.torso)
        require(self.compute_dtype in COMPUTE_DTYPES, "compute_dtype",
                "one of " + ", ".join(COMPUTE_DTYPES), self.compute_dtype)
        require(self.torso_features >= 0, "torso_features", ">= 0", self.torso_features)
        require(len(self.hidden_sizes) > 0 and min(self.hidden_sizes) >= 1, "hidden_sizes",
                "a non-empty list of positive integers", self.hidden_sizes)
        require(self.lstm_size >= 1, "lstm_size", ">= 1", self.lstm_size)
        require(self.head_hidden_size >= 0, "head_hidden_size", ">= 0", self.head_hidden_size)
        require(self.batch_size >= 1, "batch_size", ">= 1", self.batch_size)
        require_replay_fields(self)
        require(0 <= self.max_priority_weight <= 1, "max_priority_weight", "in [0, 1]",
                self.max_priority_weight)
        require(0 < self.epsilon_base <= 1, "epsilon_base", "in (0, 1]", self.epsilon_base)
        require(self.epsilon_alpha >= 0, "epsilon_alpha", ">= 0", self.epsilon_alpha)
        require(0 <= self.epsilon_eval <= 1, "epsilon_eval", "in [0, 1]", self.epsilon_eval)

    @property
    def trained_steps(self) -> int:
        """Steps of each sequence that carry a loss: L - B."""
        return self.sequence_length - self.burn_in

    @classmethod
    def atari(cls, **overrides) -> R2D2Config:
        """R2D2 sized for a 2-core CPU (docs/agents/r2d2.md gives each value's measurement).

        The paper's layout (64 sequences of 80, the Nature CNN, a 512-unit LSTM) costs about
        3.6 s of both cores an update here: an hour gives 200 updates. This keeps R2D2's
        parts (stored state with burn-in, n-step double Q with value rescaling, prioritized
        sequences, Ape-X epsilons) and spends the CPU as DQN's Atari preset does: the IMPALA
        paper's 16/32 torso with a 256-unit layer before a 256-unit LSTM, bfloat16
        convolutions where native, 32 sequences of 10 burn-in + 20 trained steps (127 ms an
        update with AMX), each step trained 8 times (DQN's replay ratio) and the target
        copied every 80k trained steps (DQN's 2,500 x 32).
        """
        values = dict(
            sequence_length=30, period=20, burn_in=10, discount=0.99, n_step=5,
            target_update_period=125, torso="atari_shallow", compute_dtype="auto",
            torso_features=256, lstm_size=256, head_hidden_size=256,
            # Adam's epsilon well below the gradients: the loss is a mean over 640 steps of
            # rescaled values, and its global gradient norm measured 0.004-0.009 in the
            # first 2,800 updates on Pong (about 4e-6 a weight): at 1e-4 (tried first)
            # every update was damped about 20-fold, and 250k steps learned nothing.
            batch_size=32, learning_rate=2.5e-4, learning_rate_decay_steps=0, adam_epsilon=1e-6,
            # Sequences start every 20 steps and train their last 20: each step is trained in
            # one sequence, so 8 samples per sequence train each step 8 times. 20,000
            # sequences are the last 400k steps (about 7 GB of frames and core states).
            samples_per_insert=8.0, min_replay_size=1_000, max_replay_size=20_000,
            epsilon_per_environment=True, epsilon_eval=0.001, variable_update_period=400,
        )
        values.update(overrides)
        return cls(**values)
