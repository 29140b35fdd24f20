"""PPO's configuration (and A2C's, a preset of it): every default commented, every field
validated."""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

from agentkit.config import require, require_common_fields
from components.networks.initializers import INITS
from components.networks.mlp import ACTIVATIONS
from components.networks.precision import COMPUTE_DTYPES
from components.networks.torso import TORSOS


@dataclasses.dataclass
class PPOConfig:
    """Hyperparameters of synchronous PPO. Defaults suit CartPole (rl-baselines3-zoo's tuned
    settings, with the classic-control preset's 1 actor x 8 environments giving its 8 x 32
    steps per round, and stable-baselines3's separate tanh MLPs with orthogonal weights);
    `PPOConfig.atari()` gives the paper's Atari ones. (The network's choice, measured:
    docs/benchmarks.md, "Figures behind the presets".)"""

    # Returns and advantages.
    discount: float = 0.98  # gamma.
    gae_lambda: float = 0.8  # lambda of GAE (1: bootstrapped Monte Carlo returns).
    rollout_length: int = 32  # T: steps each environment takes per round.

    # Loss.
    clip_epsilon: float = 0.2  # The surrogate clips pi / pi_old to [1 - eps, 1 + eps]; 0: none.
    value_clip: float = 0.0  # > 0: PPO2's clipped value loss with this range (0: plain).
    baseline_cost: float = 0.5  # Weight of the value loss 0.5 (G - V)^2.
    entropy_cost: float = 0.0  # Weight of the entropy bonus.
    normalize_advantages: bool = True  # Advantages scaled to mean 0, std 1 in each minibatch.

    # Optimisation: each round, num_epochs passes over its steps in num_minibatches parts.
    num_epochs: int = 20  # Passes over a round's steps.
    num_minibatches: int = 1  # Minibatches per pass (one: the whole round, 256 steps here).
    optimizer: str = "adam"  # "adam" or "rmsprop".
    learning_rate: float = 1e-3  # The optimizer's step size.
    learning_rate_final: float = 0.0  # Rate at the end of the decay.
    learning_rate_decay_steps: int = 0  # Learner (SGD) steps of linear decay (0: constant).
    # > 0: the rate adapts after every SGD step instead of decaying: /1.5 when the step's
    # approximate KL from the behaviour policy is above twice this, x1.5 below half, within
    # [1e-6, 1e-2] (rl_games' adaptive schedule). 0: the linear decay above.
    kl_target: float = 0.0
    adam_epsilon: float = 1e-5  # Adam's (or RMSProp's) denominator floor.
    max_gradient_norm: float = 0.5  # Global-norm gradient clipping.

    # Network.
    torso: str = "auto"  # "mlp", "atari" (Nature CNN), "atari_shallow" (16/32), "minatar", or "auto".
    hidden_sizes: tuple[int, ...] = (64, 64)  # MLP torso layers.
    head_hidden_size: int = 0  # Hidden layer of the policy-value head; 0 for none.
    # The convolutions' float type: "auto" is bfloat16 on CPUs with AVX-512 BF16 or AMX,
    # float32 elsewhere (components.networks.precision).
    compute_dtype: str = "float32"
    shared_torso: bool = False  # One torso for policy and value (else one each).
    # Observations shifted and scaled per element by running moments the learner updates
    # from each round, clipped to [-5, 5] (rl_games' normalize_input).
    normalize_observations: bool = False
    # Weights: Sonnet's "default" or "orthogonal" (A2C/PPO's gains: sqrt 2 hidden, 0.01 logits).
    network_init: str = "orthogonal"
    activation: str = "tanh"  # The MLP torso's nonlinearity: "relu" or "tanh".

    # Acting.
    evaluation_greedy: bool = True  # The evaluator takes argmax actions (else it samples).
    # Rounds an actor may act ahead of the learner: 0, each round acts with the weights
    # learned from the round before (acting and learning take turns); 1, the actor starts
    # one round ahead and stays there, acting while the learner learns (a policy lag of one
    # version, two at most with several actors, which the ratio to the behaviour policy
    # corrects as in the rest of PPO's epochs).
    max_policy_lag: int = 0

    # The acting layout and other program flags by family, beside the config values of the
    # classmethods below (agentkit.presets). Classic control: one actor stepping all 8
    # environments (rl-baselines3-zoo's 8: half the policy calls of 2 x 4 and no actor
    # waiting on another), the first evaluation at 5,000 steps. MinAtar: one actor of 16
    # games (a round: 16 x 128 steps), evaluated every 25,000 frames. Atari: one actor of 64
    # games in ale-py's C++ threads (rounds of 64 x 128 steps, rl_games' Pong layout), a lost
    # life a bootstrap's end as the references' EpisodicLifeEnv (Breakout 139.7 against 56.0
    # without it at 2.5M steps; games without lives, Pong, unchanged), 10 evaluation games
    # every 250k steps.
    program_presets: ClassVar[dict[str, dict[str, Any]]] = {
        "classic_control": {"num_actors": 1, "num_envs_per_actor": 8, "eval_at_start": False},
        "minatar": {"num_actors": 1, "num_envs_per_actor": 16, "eval_every": 25_000},
        "atari": {"num_actors": 1, "num_envs_per_actor": 64, "atari_vector_env": True,
                  "atari_life_loss": True, "eval_every": 250_000},
    }

    def __post_init__(self):
        require_common_fields(self)
        self.hidden_sizes = tuple(int(h) for h in self.hidden_sizes)
        require(0.0 <= self.discount <= 1.0, "discount", "in [0, 1]", self.discount)
        require(0.0 <= self.gae_lambda <= 1.0, "gae_lambda", "in [0, 1]", self.gae_lambda)
        require(self.rollout_length >= 1, "rollout_length", ">= 1", self.rollout_length)
        require(0.0 <= self.clip_epsilon < 1.0, "clip_epsilon", "in [0, 1) (0: no clipping)",
                self.clip_epsilon)
        require(self.value_clip >= 0, "value_clip", ">= 0", self.value_clip)
        require(self.baseline_cost >= 0, "baseline_cost", ">= 0", self.baseline_cost)
        require(self.entropy_cost >= 0, "entropy_cost", ">= 0", self.entropy_cost)
        require(self.num_epochs >= 1, "num_epochs", ">= 1", self.num_epochs)
        require(self.max_policy_lag in (0, 1), "max_policy_lag", "0 or 1", self.max_policy_lag)
        require(self.num_minibatches >= 1, "num_minibatches", ">= 1", self.num_minibatches)
        require(self.kl_target >= 0, "kl_target", ">= 0 (0: no adaptive rate)", self.kl_target)
        require(self.kl_target == 0 or self.learning_rate_decay_steps == 0, "kl_target",
                "0 when --learning_rate_decay_steps is set (one schedule at a time)",
                self.kl_target)
        require(self.kl_target == 0 or 1e-6 <= self.learning_rate <= 1e-2, "learning_rate",
                "in [1e-6, 1e-2], the adaptive rate's range, with --kl_target",
                self.learning_rate)
        require(self.compute_dtype in COMPUTE_DTYPES, "compute_dtype",
                "one of " + ", ".join(COMPUTE_DTYPES), self.compute_dtype)
        require(self.optimizer in ("adam", "rmsprop"), "optimizer", "adam or rmsprop",
                self.optimizer)
        require(self.torso in TORSOS, "torso", "one of " + ", ".join(TORSOS), self.torso)
        require(self.network_init in INITS, "network_init", "one of " + ", ".join(INITS),
                self.network_init)
        require(self.activation in ACTIVATIONS, "activation", "one of " + ", ".join(ACTIVATIONS),
                self.activation)
        require(len(self.hidden_sizes) > 0 and min(self.hidden_sizes) >= 1, "hidden_sizes",
                "a non-empty list of positive integers", self.hidden_sizes)
        require(self.head_hidden_size >= 0, "head_hidden_size", ">= 0", self.head_hidden_size)

    @classmethod
    def minatar(cls, **overrides) -> PPOConfig:
        """MinAtar: the paper's network (one 16-filter 3x3 convolution, 128 hidden units) as a
        shared torso under the policy-value head; rounds of 16 games x 32 steps in 4
        minibatches of 128, 4 epochs, Adam at 1e-3, clip 0.2, entropy 0.01, lambda 0.95.
        (The rollout length and rate, measured: docs/benchmarks.md, "Figures behind the
        presets".)"""
        values = dict(
            discount=0.99, gae_lambda=0.95, rollout_length=32, clip_epsilon=0.2,
            entropy_cost=0.01, num_epochs=4, num_minibatches=4, learning_rate=1e-3,
            torso="minatar", head_hidden_size=128, shared_torso=True, network_init="default",
        )
        values.update(overrides)
        return cls(**values)

    @classmethod
    def atari(cls, **overrides) -> PPOConfig:
        """Large-batch PPO after rl_games' Pong settings: rounds of 64 games x T = 128 in 4
        minibatches of 2,048 for 4 epochs, Adam from 3e-4 steered by the KL of every SGD step
        (target 0.01), clip 0.2 (the value's too), gradient norm 1.0, entropy 0.01, lambda
        0.95, observations normalised by their running moments; on the IMPALA paper's
        shallow 16/32 network with a 256-unit layer, shared and
        initialised as baselines' (orthogonal, gains sqrt(2), 0.01, 1), in float32. Why these,
        with figures: docs/agents/ppo.md, Atari preset."""
        values = dict(
            discount=0.99, gae_lambda=0.95, rollout_length=128, clip_epsilon=0.2,
            value_clip=0.2, entropy_cost=0.01, num_epochs=4, num_minibatches=4,
            learning_rate=3e-4, kl_target=0.01, max_gradient_norm=1.0,
            normalize_observations=True,
            torso="atari_shallow", head_hidden_size=256, shared_torso=True,
            network_init="orthogonal", evaluation_greedy=False,  # Sampled, as the paper's.
        )
        values.update(overrides)
        return cls(**values)


@dataclasses.dataclass
class A2CConfig(PPOConfig):
    """A2C (PAAC): PPO with one gradient step per round on the whole round, no clipping, and
    n-step returns (lambda 1). Defaults are stable-baselines3's A2C (T = 5, RMSProp at 7e-4),
    with the entropy bonus off as rl-baselines3-zoo's CartPole setting has it."""

    discount: float = 0.99  # gamma.
    gae_lambda: float = 1.0  # Bootstrapped n-step returns, n up to T.
    rollout_length: int = 5  # T: steps each environment takes per round.
    clip_epsilon: float = 0.0  # One step per round: the ratio is 1, nothing to clip.
    normalize_advantages: bool = False  # The plain advantage actor-critic.
    num_epochs: int = 1  # One gradient step per round.
    num_minibatches: int = 1
    optimizer: str = "rmsprop"
    learning_rate: float = 7e-4  # RMSProp's step size (decay 0.99).
    network_init: str = "default"  # Sonnet's (A2C's figures were measured so; PPO's is orthogonal).
    activation: str = "relu"  # The MLP torso's nonlinearity (PPO's default is tanh).
    # The rest as PPO's (baseline_cost 0.5, max_gradient_norm 0.5, adam_epsilon 1e-5).

    # PPO's layouts, but Atari's 8 games (rounds of 8 x 5 steps) and whole games to the
    # bootstrap, as A2C's figures were run (its life-loss learning is not measured).
    program_presets: ClassVar[dict[str, dict[str, Any]]] = {
        **PPOConfig.program_presets,
        "atari": {**PPOConfig.program_presets["atari"], "num_envs_per_actor": 8,
                  "atari_life_loss": False},
    }

    @classmethod
    def minatar(cls, **overrides) -> A2CConfig:
        """MinAtar: A2C's T = 5 rounds with entropy 0.01 on the MinAtar paper's network (one
        16-filter 3x3 convolution, 128 hidden units) as a shared torso."""
        values = dict(entropy_cost=0.01, torso="minatar", head_hidden_size=128,
                      shared_torso=True)
        values.update(overrides)
        return cls(**values)

    @classmethod
    def atari(cls, **overrides) -> A2CConfig:
        """PAAC's / baselines' A2C Atari settings: T = 5, entropy 0.01, a shared Nature CNN."""
        values = dict(entropy_cost=0.01, torso="atari", head_hidden_size=512, shared_torso=True,
                      network_init="orthogonal", evaluation_greedy=False)
        values.update(overrides)
        return cls(**values)
