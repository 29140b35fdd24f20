"""APPO's configuration: IMPALA's fields plus the clipped surrogate's."""

from __future__ import annotations

import dataclasses

from agentkit.config import require
from agents.impala.config import IMPALAConfig


@dataclasses.dataclass
class APPOConfig(IMPALAConfig):
    """Hyperparameters of APPO (asynchronous PPO, Sample Factory's): IMPALA's pipeline and
    V-trace, with PPO's clipped surrogate in place of the plain policy gradient."""

    clip_epsilon: float = 0.2  # The surrogate clips pi / mu to [1 - epsilon, 1 + epsilon].
    normalize_advantages: bool = True  # Advantages scaled to mean 0, std 1 in each batch.
    # SGD steps on each batch (Sample Factory's num_epochs): the clip keeps the reuse safe,
    # V-trace corrects the lag the extra steps add.
    num_epochs: int = 1

    def __post_init__(self):
        super().__post_init__()
        require(0.0 < self.clip_epsilon < 1.0, "clip_epsilon", "in (0, 1)", self.clip_epsilon)
        require(self.num_epochs >= 1, "num_epochs", ">= 1", self.num_epochs)

    @classmethod
    def classic_control(cls, **overrides) -> APPOConfig:
        """PPO's CartPole settings in APPO's pipeline: unrolls of 32 steps, batches of 8 (one
        per environment of a 1 x 8 actor), 20 epochs on each at a rate of 1e-3, gamma 0.98,
        V-trace lambda 0.8, no entropy bonus, gradient norm 0.5, weights fetched once per
        unroll, a queue of 24 unrolls (3 rounds: it bounds the lag when actors outrun the
        learner), and PPO's network (separate tanh MLPs, orthogonal weights).
        (Measured against the alternatives: docs/benchmarks.md, "Figures behind the presets".)"""
        values = dict(
            unroll_length=32, batch_size=8, num_epochs=20, learning_rate=1e-3,
            value_learning_rate=0.0, discount=0.98, vtrace_lambda=0.8, entropy_cost=0.0,
            max_gradient_norm=0.5, adam_epsilon=1e-5, variable_update_period=32,
            max_queue_size=24, activation="tanh", network_init="orthogonal",
        )
        values.update(overrides)
        return cls(**values)

    @classmethod
    def atari(cls, **overrides) -> APPOConfig:
        """RLlib's Pong APPO (`tuned_examples/appo/pong-appo.yaml`: 18 within 2.5M agent
        steps there): unrolls of 50 steps in batches of 15 (750 steps), 2 SGD steps on each,
        clip 0.3, Adam at 5e-4, gradient norm 10 (on mean losses, as RLlib's), the value loss
        at weight 1 (RLlib's vf_loss_coeff; 0.5 (vs - V)^2 as here), entropy 0.01, V-trace
        lambda 1, advantages not normalised; on the IMPALA paper's shallow 16/32 network with
        a 256-unit layer (RLlib's runs on 42x42 frames with its own small network), shared
        and initialised as baselines', with observations normalised by running moments as
        PPO's Atari preset (without them PPO did not learn Pong in 700k steps). The acting
        layout is IMPALA's Atari one."""
        values = dict(
            unroll_length=50, batch_size=15, num_epochs=2, clip_epsilon=0.3,
            normalize_advantages=False, optimizer="adam", learning_rate=5e-4,
            value_learning_rate=0.0, learning_rate_final=0.0, learning_rate_decay_steps=0,
            adam_epsilon=1e-8, max_gradient_norm=10.0, baseline_cost=1.0, entropy_cost=0.01,
            vtrace_lambda=1.0, torso="atari_shallow", head_hidden_size=256, shared_torso=True,
            normalize_observations=True,
            network_init="orthogonal", max_queue_size=32, variable_update_period=20,
            evaluation_greedy=False,  # Sampled, as the paper's returns.
        )
        values.update(overrides)
        return cls(**values)
