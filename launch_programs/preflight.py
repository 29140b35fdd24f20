"""The checks a run passes before any process starts: one environment and the networks made
once (a mismatch fails here), the ports, the cluster's address and the logdir."""

from __future__ import annotations

import functools
import inspect

from launch_programs.flags import RunSpec, UsageError


def environment_factory(name: str, seed: int, evaluation: bool,
                         observation_indices: tuple[int, ...] = (),
                         sticky_actions: float | None = None, render: bool = False):
    from components.environments import make_environment

    return make_environment(name, seed=seed, evaluation=evaluation,
                            observation_indices=observation_indices,
                            sticky_actions=sticky_actions, render=render)


def _vector_environments(name: str, seeds: list, evaluation: bool,
                         sticky_actions: float | None = None, life_loss: bool = False):
    from components.environments import make_vector_environment

    # Evaluation plays whole games and reads no discounts: a lost life is only training's.
    return make_vector_environment(name, seeds, evaluation, sticky_actions=sticky_actions,
                                   life_loss=life_loss and not evaluation)


def batched_environment_factory(run: RunSpec):
    """With --atari_vector_env, each actor group's games in one native vector environment."""
    from components.environments import UnknownEnvironmentError

    program = run.program_config
    if not program.atari_vector_env:
        if program.atari_life_loss:
            raise UsageError("--atari_life_loss (given, or in the agent's Atari preset): only "
                             "with --atari_vector_env (the games stepped in ale-py's C++ "
                             "threads report their lives); add --atari_life_loss=false")
        return None
    factory = functools.partial(_vector_environments, run.env,
                                sticky_actions=run.sticky_actions,
                                life_loss=program.atari_life_loss)
    try:
        factory([0], False).close()  # An unknown game or a non-Atari env fails here.
    except UnknownEnvironmentError as e:
        raise UsageError(str(e)) from None
    return factory


def prepare(run: RunSpec):
    """Makes one environment and the networks once: a mismatch fails here, before launch."""
    from agentkit.config import ConfigError
    from agentkit.specs import make_environment_spec
    from components.environments import UnknownEnvironmentError
    from components.learners import target_copies
    from launch_programs.agent_program import check_inference

    factory = functools.partial(environment_factory, run.env,
                                observation_indices=run.observation_indices,
                                sticky_actions=run.sticky_actions)
    try:
        environment = factory(seed=0, evaluation=False)
    except UnknownEnvironmentError as e:
        raise UsageError(str(e)) from None
    spec = make_environment_spec(environment)
    environment.close()
    program = run.program_config
    try:
        inspect.signature(run.builder_class).bind(run.agent_config, layout=program.layout)
    except TypeError:
        raise UsageError(f"--agent={run.agent}: its builder's constructor must take "
                         f"(config, layout=None), layout being the acting layout "
                         f"(agentkit.acting.ActingLayout); {run.builder_class.__name__} takes "
                         f"{inspect.signature(run.builder_class)}") from None
    try:
        builder = run.builder_class(run.agent_config, layout=program.layout)
    except ConfigError as e:
        raise UsageError(str(e)) from None  # It names the flag (and the agent).
    try:
        check_inference(builder, program)
    except ConfigError as e:
        raise UsageError(str(e)) from None
    try:
        networks = builder.make_networks(spec=spec)
    except (ConfigError, ValueError) as e:
        raise UsageError(f"--agent={run.agent} does not fit --env={run.env}: {e}") from None
    try:  # The learner's targets are a second call: it must give the same networks.
        target_copies(networks, builder.make_networks(spec=spec))
    except ValueError as e:
        raise UsageError(f"--agent={run.agent}: {e}") from None
    return builder, factory, spec


def check_before_launch(run: RunSpec):
    """Every check that needs no process started: the ports, the cluster, the logdir and a
    resume (last: it takes the logdir's lock).

    Returns the inspected run directory; raises ValueError (one line) on failure.
    """
    from components.replay import port_in_use
    from launch_programs.ray_session import check_ray_address
    from launch_programs.run_dir import RunDir

    port = run.program_config.replay_port
    if port and not run.on_cluster and port_in_use(port):
        raise UsageError(f"--replay_port: port {port} is in use")
    if run.on_cluster:
        check_ray_address(run.ray_config.ray_address)
    return RunDir.inspect(run)


def network_status(run: RunSpec) -> str:
    """Who can reach the run's servers, for summary.json."""
    from launch_programs.isolation import isolation_status

    if run.on_cluster:
        return "cluster: the replay listens on every interface of its host, without authentication"
    return isolation_status()


def network_line(run: RunSpec) -> str | None:
    """One line at start when a run's replay server is reachable from the network."""
    from launch_programs.isolation import ISOLATED

    status = network_status(run)
    if status == ISOLATED:
        return None
    if not run.private_network:
        status = "--private_network=false"
    return f"replay server reachable from the network ({status}); see docs/launchers.md"
