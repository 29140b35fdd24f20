"""How many of each node a program has, and when it stops, evaluates and checkpoints."""

from __future__ import annotations

import dataclasses

from agentkit.acting import ActingLayout
from agentkit.config import require, require_finite_floats


@dataclasses.dataclass
class ProgramConfig:
    """How many of each node, and when to stop and evaluate."""

    num_actors: int = 2  # Actor nodes.
    num_envs_per_actor: int = 4  # Environments each actor steps with one policy call.
    env_groups: int = 1  # 2: alternating groups of K/2, one simulating while the other infers.
    atari_vector_env: bool = False  # atari: step each group's games in ale-py's C++ threads.
    # atari, with atari_vector_env: a lost life ends training's bootstrap (discount 0) while the
    # game and its score go on, as the references' EpisodicLifeEnv (CleanRL, baselines).
    atari_life_loss: bool = False
    max_env_failures: int = 10  # Episodes an actor's simulators may fail (raise) before it does.
    max_actor_steps: int = 100_000  # The program ends when actors took this many steps in all.
    eval_every: int = 5_000  # Actor steps between evaluations (and a last one at max_actor_steps).
    eval_episodes: int = 10  # Episodes per evaluation (run at once, one per environment).
    eval_at_start: bool = True  # Also evaluate at step 0 (the untrained baseline).
    seed: int = 0  # Seeds the environments and the policies' exploration (not the network init).
    print_every_s: float = 5.0  # Progress line period (0: silent).
    checkpoint_every_s: float = 300.0  # Learner (and replay) checkpoint period.
    checkpoint_replay: bool = False  # Also checkpoint the Reverb tables (<logdir>/checkpoints/replay).
    replay_port: int | None = None  # None picks a free port (once: a restarted replay keeps it).
    # local: each actor runs its policy; central: an inference node answers every actor's
    # observations in batches (SEED RL, GA3C) and the actors only step environments.
    inference: str = "local"
    inference_batch_size: int = 0  # Rows a central batch waits for (0: every actor's group).
    inference_deadline_ms: float = 2.0  # The longest a central batch waits for more rows.
    # Stop cleanly (checkpoints saved) when the memory left falls below this many MB (None:
    # 10% of the machine's or its memory cgroup's total, within 256 and 1024; 0: never).
    min_free_memory_mb: float | None = None

    def __post_init__(self):
        require_finite_floats(self)
        _ = self.layout  # Made here to check num_actors, num_envs_per_actor and env_groups.
        require(self.max_env_failures >= 0, "max_env_failures", ">= 0", self.max_env_failures)
        require(self.max_actor_steps >= 1, "max_actor_steps", ">= 1", self.max_actor_steps)
        require(self.eval_every >= 1, "eval_every", ">= 1", self.eval_every)
        require(self.eval_episodes >= 0, "eval_episodes", ">= 0", self.eval_episodes)
        require(self.seed >= 0, "seed", ">= 0", self.seed)
        require(self.checkpoint_every_s > 0, "checkpoint_every_s", "> 0", self.checkpoint_every_s)
        require(self.replay_port is None or 0 <= self.replay_port < 65536, "replay_port",
                "a port number", self.replay_port)
        require(self.inference in ("local", "central"), "inference", "local or central",
                self.inference)
        require(self.inference_batch_size >= 0, "inference_batch_size", ">= 0",
                self.inference_batch_size)
        require(self.inference_deadline_ms >= 0, "inference_deadline_ms", ">= 0",
                self.inference_deadline_ms)
        require(self.min_free_memory_mb is None or self.min_free_memory_mb >= 0,
                "min_free_memory_mb", ">= 0", self.min_free_memory_mb)

    @property
    def layout(self) -> ActingLayout:
        """The acting layout these flags give: what the builder is made with."""
        return ActingLayout(num_actors=self.num_actors, num_envs_per_actor=self.num_envs_per_actor,
                            env_groups=self.env_groups)
