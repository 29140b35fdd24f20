"""DQN's acting side under ray, with an idle learner: what benchmarks of acting count.

The learner's table never reaches its minimum size, so it never samples and the
figure is what the actors, the replay and Ray sustain together. Used by
bench/scaling.py (actor processes, nodes) and bench/inference.py (local against
central inference): each builds its program here, launches it with a watcher
thread that measures, and stops it when the watcher is done.
"""

from __future__ import annotations

import functools
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from agentkit.specs import make_environment_spec  # noqa: E402
from agents.dqn import DQNBuilder, DQNConfig  # noqa: E402
from launch_programs.agent_program import ProgramConfig, make_agent_program  # noqa: E402
from launch_programs.preflight import environment_factory  # noqa: E402
from launch_programs.program import Program  # noqa: E402
from launch_programs.ray_launcher import RayLauncher  # noqa: E402

NEVER = 10**9  # A minimum table size no run reaches: the learner never samples.


def acting_only_program(env: str, num_actors: int, envs_per_actor: int,
                        agent: dict[str, Any] | None = None,
                        program: dict[str, Any] | None = None) -> Program:
    """The DQN program of `num_actors` x `envs_per_actor` environments of `env`, its learner
    idle; `agent` and `program` are DQNConfig and ProgramConfig fields on top."""
    factory = functools.partial(environment_factory, env)
    spec = make_environment_spec(factory(seed=0, evaluation=False))
    config = DQNConfig(min_replay_size=NEVER, max_replay_size=NEVER, **(agent or {}))
    program_config = ProgramConfig(num_actors=num_actors, num_envs_per_actor=envs_per_actor,
                                   max_actor_steps=NEVER, eval_episodes=0, print_every_s=0,
                                   **(program or {}))
    logdir = tempfile.mkdtemp(prefix="bench-acting-")
    return make_agent_program(DQNBuilder(config), factory, spec, program_config, logdir)


def node(launcher: RayLauncher, name: str) -> Any:
    """The node `name` of a launching program, once it is built."""
    while name not in launcher.objects:
        time.sleep(0.05)
    return launcher.objects[name]


def steps_per_s(counter: Any, window_s: float, at_start: Callable[[], None] = lambda: None,
                at_end: Callable[[], None] = lambda: None) -> float:
    """Counted actor steps per second over `window_s`, calling `at_start` and `at_end` at its
    edges (for figures read over the same window)."""
    t0, s0 = time.time(), counter.get_counts()["actor_steps"]
    at_start()
    time.sleep(window_s)
    t1, s1 = time.time(), counter.get_counts()["actor_steps"]
    at_end()
    return round((s1 - s0) / (t1 - t0), 1)


def launch_and_watch(launcher: RayLauncher, watch: Callable[[], None]) -> str:
    """Launches the program with `watch()` running beside it in a thread, stops it once
    `watch` returns (or fails) and returns the launch's status."""

    def target():
        try:
            watch()
        finally:
            launcher.request_stop()

    watcher = threading.Thread(target=target, daemon=True)
    watcher.start()
    try:
        status = launcher.launch().status
    finally:
        launcher.close()
    watcher.join(10)
    return status
