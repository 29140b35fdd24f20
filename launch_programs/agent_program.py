"""The one generic function that turns any agent's builder into a program.

Nodes: `replay` (Reverb server with the builder's tables), `counter`,
`learner`, `actor_0..N-1` (each a batched actor over K environments) and
`evaluator`. The builder supplies every part; this module only wires them.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable
from typing import Any

from agentkit.config import require
from agentkit.specs import EnvironmentSpec
from components.replay import pick_free_port
from launch_programs import nodes
from launch_programs.program import Program


@dataclasses.dataclass
class ProgramConfig:
    """How many of each node, and when to stop and evaluate."""

    num_actors: int = 2  # Actor nodes.
    num_envs_per_actor: int = 4  # Environments each actor steps with one policy call.
    env_groups: int = 1  # 2: alternating groups of K/2, one simulating while the other infers.
    atari_vector_env: bool = False  # atari: step each group's games in ale-py's C++ threads.
    max_env_failures: int = 10  # Episodes an actor's simulators may fail (raise) before it does.
    max_actor_steps: int = 100_000  # The program ends when actors took this many steps in all.
    eval_every: int = 5_000  # Actor steps between evaluations.
    eval_episodes: int = 10  # Episodes per evaluation (run at once, one per environment).
    eval_at_start: bool = True  # Also evaluate at step 0 (the untrained baseline).
    seed: int = 0
    print_every_s: float = 5.0  # Progress line period (0: silent).
    checkpoint_every_s: float = 300.0  # Learner (and replay) checkpoint period.
    checkpoint_replay: bool = False  # Also checkpoint the Reverb tables (<logdir>/checkpoints/replay).
    replay_port: int | None = None  # None picks a free port (once: a restarted replay keeps it).

    def __post_init__(self):
        require(self.num_actors >= 1, "num_actors", ">= 1", self.num_actors)
        require(self.num_envs_per_actor >= 1, "num_envs_per_actor", ">= 1",
                self.num_envs_per_actor)
        require(self.env_groups >= 1 and self.num_envs_per_actor % self.env_groups == 0,
                "env_groups", f"a divisor of num_envs_per_actor ({self.num_envs_per_actor})",
                self.env_groups)
        require(self.max_env_failures >= 0, "max_env_failures", ">= 0", self.max_env_failures)
        require(self.max_actor_steps >= 1, "max_actor_steps", ">= 1", self.max_actor_steps)
        require(self.eval_every >= 1, "eval_every", ">= 1", self.eval_every)
        require(self.eval_episodes >= 0, "eval_episodes", ">= 0", self.eval_episodes)
        require(self.seed >= 0, "seed", ">= 0", self.seed)
        require(self.checkpoint_every_s > 0, "checkpoint_every_s", "> 0", self.checkpoint_every_s)
        require(self.replay_port is None or 0 <= self.replay_port < 65536, "replay_port",
                "a port number", self.replay_port)


def make_agent_program(
    builder: Any,
    environment_factory: Callable[..., Any],
    spec: EnvironmentSpec,
    config: ProgramConfig,
    logdir: str | None = None,
    start_time: float | None = None,
    name: str = "agent",
    initial_counts: dict | None = None,
    batched_environment_factory: Callable[[list, bool], Any] | None = None,
) -> Program:
    """Builds the program graph of an agent.

    `environment_factory(seed=..., evaluation=...)` makes one environment;
    `spec` is its spec (read once by the caller, which also checks that the
    builder's networks fit it). `batched_environment_factory(seeds,
    evaluation)`, if given, makes each actor's groups of environments at once
    (ale-py's vector environment). `initial_counts` resumes the counter (a
    resumed run continues its step budget and counts from there).
    """
    start_time = time.time() if start_time is None else start_time
    program = Program(name)
    # The port is fixed here, not by the server: a replay process that is
    # restarted comes back on the same address, and its clients reconnect.
    port = config.replay_port or pick_free_port()
    replay_checkpoints = None
    if config.checkpoint_replay and logdir:
        replay_checkpoints = os.path.join(logdir, "checkpoints", "replay")
    replay = program.add_node("replay", "replay", nodes.make_replay, builder, spec, port,
                              replay_checkpoints, config.checkpoint_every_s)
    counter = program.add_node("counter", "counter", nodes.make_counter, initial_counts)
    learner = program.add_node(
        "learner", "learner", nodes.LearnerNode, builder, spec, replay, counter, logdir,
        start_time, config.print_every_s, config.checkpoint_every_s,
    )
    for i in range(config.num_actors):
        program.add_node(
            f"actor_{i}", "actor", nodes.ActorNode, builder, environment_factory, spec, i,
            config.num_actors, config.num_envs_per_actor, replay, learner, counter,
            config.max_actor_steps, logdir, start_time, config.seed, config.print_every_s,
            config.max_env_failures, config.env_groups, batched_environment_factory,
            ends_program=True,
        )
    if config.eval_episodes > 0:
        program.add_node(
            "evaluator", "evaluator", nodes.EvaluatorNode, builder, environment_factory, spec,
            learner, counter, config.eval_every, config.eval_episodes, logdir, start_time,
            config.seed, config.print_every_s, config.eval_at_start,
        )
    return program
