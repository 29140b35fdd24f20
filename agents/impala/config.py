"""IMPALA's configuration: every default commented, every field validated."""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

from agentkit.config import require, require_common_fields
from components.networks.initializers import INITS
from components.networks.mlp import ACTIVATIONS
from components.networks.precision import COMPUTE_DTYPES
from components.networks.torso import TORSOS


@dataclasses.dataclass
class IMPALAConfig:
    """Hyperparameters of IMPALA. Defaults suit small tasks (CartPole);
    `IMPALAConfig.atari()` gives the Atari ones."""

    # Returns and the V-trace correction.
    discount: float = 0.99  # gamma.
    unroll_length: int = 20  # T: actions per unroll (items hold T + 1 steps).
    clip_rho_threshold: float = 1.0  # rho-bar of V-trace (< 0: no clipping).
    clip_pg_rho_threshold: float = 1.0  # rho-bar of the policy-gradient advantages (< 0: none).
    vtrace_lambda: float = 1.0  # lambda of V-trace's traces c = lambda min(1, rho) (1: the paper's).

    # Loss.
    baseline_cost: float = 0.5  # Weight of 0.5 (vs - V)^2.
    entropy_cost: float = 0.01  # Weight of the entropy bonus.

    # Network.
    torso: str = "auto"  # "mlp", "atari" (Nature CNN), "atari_shallow" (16/32), "minatar", or "auto".
    # "bfloat16": the Nature CNN's convolutions in bfloat16 on float32 weights (1.2x a DQN
    # learner step at batch 32 on CPUs with AVX-512 BF16 or AMX); "auto": bfloat16 on such
    # CPUs, float32 elsewhere (components.networks.precision).
    compute_dtype: str = "float32"
    # Weights: Sonnet's "default" or "orthogonal" (A2C/PPO's gains: sqrt 2 hidden, 0.01 logits).
    network_init: str = "default"
    activation: str = "relu"  # The MLP torso's nonlinearity: "relu" or "tanh".
    hidden_sizes: tuple[int, ...] = (64, 64)  # MLP torso layers.
    head_hidden_size: int = 0  # Hidden layer of the policy-value head; 0 for none.
    shared_torso: bool = False  # One torso for policy and value (else one each).
    lstm_size: int = 0  # > 0: an LSTM core of this size after a shared torso (recurrent policy).
    # Observations shifted and scaled per element by running moments the learner updates
    # from each batch, clipped to [-5, 5] (rl_games' normalize_input; not with lstm_size).
    normalize_observations: bool = False

    # Optimisation.
    batch_size: int = 4  # Unrolls per learner step: many small updates, as each is used once.
    optimizer: str = "adam"  # "adam" or "rmsprop".
    learning_rate: float = 2.5e-4  # The policy's rate (and the value's unless set below).
    value_learning_rate: float = 5e-3  # The value torso's own rate (separate torsos; 0: the same).
    learning_rate_final: float = 1e-4  # Rate at the end of the decay.
    learning_rate_decay_steps: int = 0  # Learner steps of linear decay (0: constant rate).
    adam_epsilon: float = 1e-8  # Adam's (or RMSProp's) denominator floor.
    max_gradient_norm: float = 40.0  # Global-norm gradient clipping.

    # Replay: a queue, each unroll consumed once.
    max_queue_size: int = 64  # Unrolls waiting for the learner; actors block beyond.

    # Acting.
    variable_update_period: int = 10  # Actor steps (batched) between weight fetches.
    evaluation_greedy: bool = True  # The evaluator takes argmax actions (else it samples).

    # The acting layout and other program flags by family, beside the config values of the
    # classmethods below (agentkit.presets). Classic control: one actor stepping 8
    # environments, the first evaluation at 5,000 steps; APPO's too (a batch of its preset is
    # one unroll of each environment). MinAtar: one actor of 16 games (a batch: one round),
    # evaluated every 25,000 frames. Atari: one actor of 16 games stepped in ale-py's C++
    # threads, in two alternating groups (one simulating while the other infers); 10
    # evaluation games every 250k steps (a Pong game lasts 800-2,000 agent steps).
    program_presets: ClassVar[dict[str, dict[str, Any]]] = {
        "classic_control": {"num_actors": 1, "num_envs_per_actor": 8, "eval_at_start": False},
        "minatar": {"num_actors": 1, "num_envs_per_actor": 16, "eval_every": 25_000},
        "atari": {"num_actors": 1, "num_envs_per_actor": 16, "env_groups": 2,
                  "atari_vector_env": True, "eval_every": 250_000},
    }

    def __post_init__(self):
        require_common_fields(self)
        self.hidden_sizes = tuple(int(h) for h in self.hidden_sizes)
        require(0.0 <= self.discount <= 1.0, "discount", "in [0, 1]", self.discount)
        require(self.unroll_length >= 1, "unroll_length", ">= 1", self.unroll_length)
        require(0.0 <= self.vtrace_lambda <= 1.0, "vtrace_lambda", "in [0, 1]",
                self.vtrace_lambda)
        require(self.baseline_cost >= 0, "baseline_cost", ">= 0", self.baseline_cost)
        require(self.entropy_cost >= 0, "entropy_cost", ">= 0", self.entropy_cost)
        require(self.torso in TORSOS, "torso", "one of " + ", ".join(TORSOS), self.torso)
        require(self.network_init in INITS, "network_init", "one of " + ", ".join(INITS),
                self.network_init)
        require(self.activation in ACTIVATIONS, "activation", "one of " + ", ".join(ACTIVATIONS),
                self.activation)
        require(self.compute_dtype in COMPUTE_DTYPES, "compute_dtype",
                "one of " + ", ".join(COMPUTE_DTYPES), self.compute_dtype)
        require(len(self.hidden_sizes) > 0 and min(self.hidden_sizes) >= 1, "hidden_sizes",
                "a non-empty list of positive integers", self.hidden_sizes)
        require(self.lstm_size >= 0, "lstm_size", ">= 0", self.lstm_size)
        require(self.head_hidden_size >= 0, "head_hidden_size", ">= 0", self.head_hidden_size)
        require(self.batch_size >= 1, "batch_size", ">= 1", self.batch_size)
        require(self.optimizer in ("adam", "rmsprop"), "optimizer", "adam or rmsprop",
                self.optimizer)
        require(self.value_learning_rate >= 0, "value_learning_rate", ">= 0",
                self.value_learning_rate)
        require(self.max_queue_size > self.batch_size + 1, "max_queue_size",
                f"> batch_size + 1 ({self.batch_size + 1})", self.max_queue_size)

    @property
    def rho_thresholds(self) -> tuple[float | None, float | None]:
        def threshold(value):
            return None if value < 0 else value

        return threshold(self.clip_rho_threshold), threshold(self.clip_pg_rho_threshold)

    @classmethod
    def minatar(cls, **overrides) -> IMPALAConfig:
        """MinAtar: the paper's network (one 16-filter 3x3 convolution, 128 hidden units) as a
        shared torso under the policy-value head; batches of 16 unrolls of 20 steps (one round
        of a 1 x 16 actor), Adam at 5e-4, the entropy bonus at 0.01."""
        values = dict(
            torso="minatar", head_hidden_size=128, shared_torso=True, batch_size=16,
            learning_rate=5e-4, value_learning_rate=0.0, max_queue_size=64,
            variable_update_period=20,
        )
        values.update(overrides)
        return cls(**values)

    @classmethod
    def atari(cls, **overrides) -> IMPALAConfig:
        """The paper's shallow-network Atari settings with Cleanba's optimiser: the 16/32
        network with a 256-unit layer, RMSProp at 6e-4 with decay 0.99, T = 20, in batches of
        16 unrolls (320 steps, as the references' 320-640), the rate annealed linearly to 0
        over 50M agent steps (Cleanba's run length: 94% of it is left at 3M), and observations
        normalised by their running moments (as PPO's and APPO's presets).

        Cleanba sums its losses over a minibatch's steps, with RMSProp's epsilon 0.01 outside
        the square root and gradients clipped at a norm of 40; this learner averages them, so
        its gradients are B x T times smaller: the same updates take a clip of 40 / (B T) and an
        epsilon of 0.01 / (B T) outside the root, that is about (0.01 / (B T))^2 inside it,
        where Sonnet's RMSProp adds it; both derived here from the batch size and unroll
        length given (about 1e-9 and 0.125 at B T = 320). The paper's own epsilon (0.01
        inside the root on its summed loss), rescaled so, is 100 times that floor: most
        weights then stepped as in plain SGD (docs/agents/impala.md)."""
        batch_size = overrides.get("batch_size", 16)
        steps = batch_size * overrides.get("unroll_length", cls.unroll_length)
        values = dict(
            torso="atari_shallow", head_hidden_size=256, shared_torso=True,
            network_init="orthogonal", normalize_observations=True, batch_size=batch_size,
            optimizer="rmsprop", learning_rate=6e-4, value_learning_rate=0.0,
            learning_rate_final=0.0, learning_rate_decay_steps=50_000_000 // steps,
            adam_epsilon=(0.01 / steps) ** 2, max_gradient_norm=40.0 / steps,
            max_queue_size=32, variable_update_period=20,
            evaluation_greedy=False,  # Sampled, as the paper's returns (an argmax of a
        )                             # near-uniform policy reads -21 on Pong).
        values.update(overrides)
        return cls(**values)
