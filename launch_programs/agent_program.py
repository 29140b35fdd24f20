"""The one generic function that turns any agent's builder into a program.

Nodes: `replay` (Reverb server with the builder's tables), `counter`,
`learner`, with `inference=central` an `inference` node (the behaviour policy,
answering every actor's observations in batches), `actor_0..N-1` (each a
batched actor over K environments) and `evaluator`. The builder
(`agentkit.builders.ActorLearnerBuilder`) supplies every part; this module only
wires them, by keyword.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

from agentkit.builders import ActorLearnerBuilder
from agentkit.config import ConfigError
from agentkit.specs import EnvironmentSpec
from components.replay import pick_free_port
from launch_programs import nodes
from launch_programs.counter_node import CounterNode
from launch_programs.inference import InferenceNode
from launch_programs.program import Program
from launch_programs.program_config import ProgramConfig

__all__ = ["ProgramConfig", "check_inference", "make_agent_program"]


def check_inference(builder: ActorLearnerBuilder, config: ProgramConfig) -> None:
    """ConfigError (one line) when the program's inference mode is one the agent cannot act in."""
    problem = builder.central_inference_problem() if config.inference == "central" else None
    if problem:
        raise ConfigError(f"--inference=central: {problem}")


def make_agent_program(
    builder: ActorLearnerBuilder,
    environment_factory: Callable[..., Any],
    spec: EnvironmentSpec,
    config: ProgramConfig,
    logdir: str | None = None,
    start_time: float | None = None,
    name: str = "agent",
    initial_counts: dict | None = None,
    batched_environment_factory: nodes.BatchedEnvironmentFactory | None = None,
) -> Program:
    """Builds the program graph of an agent.

    `environment_factory(seed=..., evaluation=...)` makes one environment;
    `spec` is its spec (read once by the caller, which also checks that the
    builder's networks fit it). `batched_environment_factory(seeds,
    evaluation)`, if given, makes each actor's groups of environments at once
    (ale-py's vector environment). `initial_counts` resumes the counter (a
    resumed run continues its step budget and counts from there); with a
    `logdir` the counter also checkpoints itself there. `start_time` is
    time.time() at the start of the run's first life: the CSVs' wall_time_s
    and the saved wall time count from it.
    """
    if not isinstance(builder, ActorLearnerBuilder):
        raise TypeError(f"make_agent_program needs an agentkit.builders.ActorLearnerBuilder, "
                        f"got {type(builder).__name__}")
    if builder.layout != config.layout:
        raise ValueError(f"the builder was made for {builder.layout}, the program config gives "
                         f"{config.layout}: make the builder with layout=config.layout")
    run = nodes.RunContext(logdir=logdir, start_time=time.time() if start_time is None
                           else start_time, seed=config.seed,
                           print_every_s=config.print_every_s)
    program = Program(name)
    # The port is fixed here, not by the server: a replay process that is
    # restarted comes back on the same address, and its clients reconnect.
    port = config.replay_port or pick_free_port()
    replay_checkpoints = None
    if config.checkpoint_replay and logdir:
        replay_checkpoints = os.path.join(logdir, "checkpoints", "replay")
    replay = program.add_node(
        "replay", "replay", nodes.make_replay, builder=builder, spec=spec, port=port,
        checkpoint_dir=replay_checkpoints, checkpoint_every_s=config.checkpoint_every_s)
    counter = program.add_node("counter", "counter", CounterNode, initial=initial_counts,
                               logdir=logdir, start_time=run.start_time)
    learner = program.add_node(
        "learner", "learner", nodes.LearnerNode, builder=builder, spec=spec, replay=replay,
        counter=counter, run=run, checkpoint_every_s=config.checkpoint_every_s)
    acting = nodes.ActingConfig.from_program_config(config)
    inference = None
    check_inference(builder, config)
    if config.inference == "central":
        rows = config.inference_batch_size or (
            config.layout.num_actors * config.layout.envs_per_group)
        inference = program.add_node(
            "inference", "inference", InferenceNode, builder=builder, spec=spec,
            variable_source=learner, counter=counter, seed=config.seed, batch_size=rows,
            deadline_ms=config.inference_deadline_ms)
    for i in range(config.layout.num_actors):
        program.add_node(
            f"actor_{i}", "actor", nodes.ActorNode, builder=builder,
            environment_factory=environment_factory, spec=spec, actor_id=i, replay=replay,
            variable_source=learner, counter=counter, run=run, acting=acting,
            batched_environment_factory=batched_environment_factory, inference=inference,
            ends_program=True)
    if config.eval_episodes > 0:
        program.add_node(
            "evaluator", "evaluator", nodes.EvaluatorNode, builder=builder,
            environment_factory=environment_factory, spec=spec, variable_source=learner,
            counter=counter, run=run, eval_every=config.eval_every,
            eval_episodes=config.eval_episodes, eval_at_start=config.eval_at_start,
            max_actor_steps=config.max_actor_steps, ends_program=True)
    return program
