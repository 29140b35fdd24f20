"""DQN's configuration: every default commented, every field validated."""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

from agentkit.config import require, require_common_fields, require_replay_fields
from components.networks.precision import COMPUTE_DTYPES
from components.networks.torso import TORSOS


@dataclasses.dataclass
class DQNConfig:
    """Hyperparameters of DQN. Defaults suit small tasks (CartPole);
    `DQNConfig.atari()` gives the Atari ones."""

    # Returns and targets.
    discount: float = 0.99  # gamma.
    n_step: int = 3  # Length of the n-step return (1 = one-step Q-learning).
    double_q: bool = True  # Select the bootstrap action with the online network.
    target_update_period: int = 100  # Learner steps between target network copies.
    target_update_tau: float = 0.0  # If > 0: Polyak-average the target every step instead.
    huber_loss_parameter: float = 1.0  # Quadratic region of the Huber loss.

    # Network.
    dueling: bool = True  # Dueling value/advantage head.
    torso: str = "auto"  # "mlp", "atari" (Nature CNN), "atari_shallow" (16/32), "minatar", or "auto".
    # "bfloat16": the Nature CNN's convolutions in bfloat16 on float32 weights (1.2x a DQN
    # learner step at batch 32 on CPUs with AVX-512 BF16 or AMX); "auto": bfloat16 on such
    # CPUs, float32 elsewhere (components.networks.precision).
    compute_dtype: str = "float32"
    hidden_sizes: tuple[int, ...] = (256, 256)  # MLP torso layers.
    head_hidden_size: int = 512  # Hidden layer of the (dueling) head; 0 for none.

    # Optimisation.
    batch_size: int = 128  # Transitions per learner step.
    # SGD steps per learner call, on batches sampled together (amortises the
    # call and the Reverb round trips; pays for small networks).
    num_sgd_steps_per_step: int = 1
    # Batches (each sampled, learned from and its priorities written) per
    # learner call, run in one compiled loop: the same steps as that many
    # calls, without the Python between them (pays for small networks).
    batches_per_call: int = 1
    learning_rate: float = 5e-4  # Adam step size.
    learning_rate_final: float = 2.5e-5  # Rate at the end of the decay.
    learning_rate_decay_steps: int = 12_500  # Learner steps of linear decay (0: constant rate).
    adam_epsilon: float = 1e-8  # Adam's denominator floor.
    max_gradient_norm: float = 10.0  # Global-norm gradient clipping.

    # Replay.
    samples_per_insert: float = 16.0  # Items sampled per item inserted (0: no ratio).
    min_replay_size: int = 1_000  # Items in the table before the learner may sample.
    max_replay_size: int = 100_000  # Oldest items are removed beyond this.
    prioritized: bool = True  # Prioritized sampling (else uniform).
    priority_exponent: float = 0.6  # alpha: how strongly priorities shape sampling.
    importance_sampling_exponent: float = 0.4  # beta: correction for the non-uniform sampling.
    actor_priorities: bool = True  # Actors give new items their |TD| (Ape-X); else priority 1.
    prefetch_size: int = 4  # Batches prefetched by the dataset.
    # Frame stacks (Atari's 84x84x4): each step stores its newest frame and items
    # reference the S + n frames of o_t and o_t+n, not four copies of each frame.
    store_frames_once: bool = False

    # Acting.
    epsilon_init: float = 1.0  # Exploration at the start of each actor.
    epsilon_final: float = 0.01  # Exploration after the decay.
    epsilon_decay_steps: int = 10_000  # Actor steps (per actor) of linear decay.
    epsilon_eval: float = 0.0  # The evaluator's epsilon (greedy).
    apex_epsilons: bool = False  # Actor i of N: fixed 0.4^(1 + 7 i / (N - 1)), no decay (Ape-X).
    variable_update_period: int = 100  # Actor steps between weight fetches.
    max_in_flight_items: int = 8  # Items an adder may have unconfirmed by the server.

    # The acting layout and other program flags by family, beside the config values of the
    # classmethods below (agentkit.presets): one actor stepping 16 environments (one policy
    # call per 16 steps); classic control's first evaluation at 5,000 steps as
    # stable-baselines3's, MinAtar's every 25,000 frames. MinAtar's replay is checkpointed
    # too, so that a stopped run resumes with it rather than refilling from empty. Atari: 16
    # games in ale-py's C++ threads in two alternating groups (the learner, not acting, sets
    # the pace), 10 evaluation games every 100k steps, and the replay (1M transitions, each
    # frame stored once) checkpointed: a Pong run spans sessions.
    program_presets: ClassVar[dict[str, dict[str, Any]]] = {
        "classic_control": {"num_actors": 1, "num_envs_per_actor": 16, "eval_at_start": False},
        "minatar": {"num_actors": 1, "num_envs_per_actor": 16, "eval_every": 25_000,
                    "checkpoint_replay": True},
        "atari": {"num_actors": 1, "num_envs_per_actor": 16, "env_groups": 2,
                  "atari_vector_env": True, "eval_every": 100_000,
                  "checkpoint_replay": True},
    }

    def __post_init__(self):
        require_common_fields(self)
        self.hidden_sizes = tuple(int(h) for h in self.hidden_sizes)
        require(0.0 <= self.discount <= 1.0, "discount", "in [0, 1]", self.discount)
        require(self.n_step >= 1, "n_step", ">= 1", self.n_step)
        require(self.target_update_period >= 1, "target_update_period", ">= 1",
                self.target_update_period)
        require(0.0 <= self.target_update_tau <= 1.0, "target_update_tau", "in [0, 1]",
                self.target_update_tau)
        require(self.huber_loss_parameter > 0, "huber_loss_parameter", "> 0",
                self.huber_loss_parameter)
        require(self.torso in TORSOS, "torso", "one of " + ", ".join(TORSOS), self.torso)
        require(self.compute_dtype in COMPUTE_DTYPES, "compute_dtype",
                "one of " + ", ".join(COMPUTE_DTYPES), self.compute_dtype)
        require(len(self.hidden_sizes) > 0 and min(self.hidden_sizes) >= 1, "hidden_sizes",
                "a non-empty list of positive integers", self.hidden_sizes)
        require(self.head_hidden_size >= 0, "head_hidden_size", ">= 0", self.head_hidden_size)
        require(self.batch_size >= 1, "batch_size", ">= 1", self.batch_size)
        require(self.num_sgd_steps_per_step >= 1, "num_sgd_steps_per_step", ">= 1",
                self.num_sgd_steps_per_step)
        require(self.min_replay_size >= 1, "min_replay_size", ">= 1", self.min_replay_size)
        require_replay_fields(self)
        for name in ("epsilon_init", "epsilon_final", "epsilon_eval"):
            value = getattr(self, name)
            require(0.0 <= value <= 1.0, name, "in [0, 1]", value)
        require(self.epsilon_decay_steps >= 0, "epsilon_decay_steps", ">= 0",
                self.epsilon_decay_steps)

    @classmethod
    def classic_control(cls, **overrides) -> DQNConfig:
        """Fast settings for CartPole-sized tasks: 7-step returns at a constant lr of 4e-3,
        rl-baselines3-zoo's batch 64, target copy every 10 learner steps, MLP 256x256 without
        a head layer and epsilon 1 -> 0.04 over 4,000 steps; 8 learner steps per compiled
        call, weights fetched every 25 batched steps, 32 items in flight per adder (with 64,
        Reverb warned of too many pending items). (Measured: docs/benchmarks.md, "Figures
        behind the presets".)"""
        values = dict(
            n_step=7, learning_rate=4e-3, learning_rate_decay_steps=0, head_hidden_size=0,
            target_update_period=10, batch_size=64, epsilon_final=0.04,
            epsilon_decay_steps=4000, batches_per_call=8, variable_update_period=25,
            max_in_flight_items=32,
        )
        values.update(overrides)
        return cls(**values)

    @classmethod
    def minatar(cls, **overrides) -> DQNConfig:
        """MinAtar (Young and Tian, 2019): the paper's network (one 16-filter 3x3 convolution,
        a 128-unit hidden layer, here in a dueling head), its replay of 100k transitions
        filled with 5,000 before learning, epsilon 1 -> 0.1 over 100k frames, gamma 0.99; this
        toolkit's double, 3-step, prioritized updates of 64 transitions every 4 frames (16
        samples per insert; the paper: 32 every frame), Adam at 2.5e-4, target copy every
        250 updates (the paper's 1,000 frames), 8 updates per compiled call."""
        values = dict(
            torso="minatar", head_hidden_size=128, batch_size=64, samples_per_insert=16.0,
            min_replay_size=5_000, max_replay_size=100_000, learning_rate=2.5e-4,
            learning_rate_decay_steps=0, epsilon_final=0.1, epsilon_decay_steps=100_000,
            target_update_period=250, batches_per_call=8, variable_update_period=25,
            max_in_flight_items=32,
        )
        values.update(overrides)
        return cls(**values)

    @classmethod
    def atari(cls, **overrides) -> DQNConfig:
        """Ape-X/Rainbow-style settings for Atari (84x84x4 frames). The convolutions run in
        bfloat16 where the CPU has AMX or AVX-512 BF16 (`compute_dtype="auto"`: 1.2x the
        learner at batch 32; the Pong curve in docs/agents/dqn.md was learned so)."""
        values = dict(
            discount=0.99, n_step=3, target_update_period=2_500, torso="atari",
            compute_dtype="auto",
            batch_size=32, learning_rate=6.25e-5, adam_epsilon=1.5e-4,
            samples_per_insert=8.0, min_replay_size=20_000, max_replay_size=1_000_000,
            epsilon_final=0.01, epsilon_decay_steps=250_000, epsilon_eval=0.001,
            variable_update_period=400, learning_rate_decay_steps=0, store_frames_once=True,
        )
        values.update(overrides)
        return cls(**values)
