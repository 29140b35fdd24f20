"""The command line: `python -m launch_programs.run --agent=dqn --env=gym:CartPole-v1 ...`.

Every agent config field is also a flag (`--batch_size=64`). Bad input fails
before anything starts, with one line naming the flag. Progress prints while
the program runs; Ctrl-C stops it cleanly; `summary.json` is written at
every exit.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import inspect
import os
import signal
import sys
import threading
import time
from collections.abc import Sequence
from typing import Any

from launch_programs.flag_help import field_comments, flag_help
from launch_programs.stop_signals import StopSignals, signal_received

COMMAND_START = time.time()  # The start-up figures in summary.json count from here.

LAUNCHERS = ("threads", "ray")
# The target return reported in summary.json as `first_reached`, where known.
THRESHOLDS = {"gym:CartPole-v1": 475.0, "gym:CartPole-v0": 195.0, "gym:Pendulum-v1": -250.0}


class UsageError(ValueError):
    """A flag holds a value that is not allowed (the message names the flag)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # One line, not argparse's usage block.
        raise UsageError(message)


def _parse_bool(text: str) -> bool:
    lowered = text.lower()
    if lowered in ("1", "true", "yes"):
        return True
    if lowered in ("0", "false", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def _parse_ints(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated integers, got {text!r}") from None


def _flag_type(default: Any):
    if isinstance(default, bool):
        return _parse_bool
    if isinstance(default, tuple):
        return _parse_ints
    if default is None:
        return int
    return type(default)


_METAVARS = {_parse_bool: "BOOL", _parse_ints: "INTS", int: "INT", float: "FLOAT", str: "STR"}


class _HelpFormatter(argparse.HelpFormatter):
    def __init__(self, prog: str):  # Wider flag column: most flags then keep help on their line.
        super().__init__(prog, max_help_position=34)


def _base_parser() -> argparse.ArgumentParser:
    # Imported here, not at the top: the registry imports numpy, whose BLAS starts threads,
    # and `_isolate` needs this process single-threaded.
    from launch_programs.registry import AGENTS, ENTRY_POINT_GROUP

    p = _Parser(prog="python -m launch_programs.run", add_help=False, allow_abbrev=False,
                formatter_class=_HelpFormatter,
                usage="%(prog)s [--agent NAME] [--env NAME] [--launch threads|ray] [--FLAG=VALUE ...]",
                description="Train an agent. Every agent config field is also a flag; "
                            "--agent and --env with --help show that agent's flags and defaults.")
    g = p.add_argument_group("run flags")
    g.add_argument("--agent", default="dqn", metavar="NAME",
                   help=f"{', '.join(AGENTS)}, a name an installed package registers in the "
                        f"entry-point group {ENTRY_POINT_GROUP}, or package.module:Factory (a builder "
                        f"class or a function returning one) (default: dqn)")
    g.add_argument("--env", default="gym:CartPole-v1", metavar="NAME",
                   help="gym:<id>, atari:<Game>, minatar:<game>, memory:<N> or "
                        "control:<domain>:<task>; "
                        "it also picks the agent's preset (default: gym:CartPole-v1)")
    g.add_argument("--launch", default="threads", metavar="|".join(LAUNCHERS),
                   help="threads: every node in this process; ray: one process per node "
                        "(default: threads)")
    g.add_argument("--logdir", default=None, metavar="DIR",
                   help="where the CSVs, checkpoints and summary.json go "
                        "(default: runs/<agent>-<env>-s<seed>)")
    g.add_argument("--fresh", action="store_true",
                   help="ignore and replace the checkpoint in --logdir")
    g.add_argument("--private_network", type=_parse_bool, nargs="?", const=True, default=True,
                   metavar="BOOL",
                   help="a local run (threads, or ray on no cluster) runs in private Linux "
                        "namespaces: loopback only, so its replay server is unreachable from the "
                        "network, and no process of it outlives it (default: true)")
    g.add_argument("--observation_indices", type=_parse_ints, default=(), metavar="INTS",
                   help="keep only these entries of a vector observation "
                        "(gym:CartPole-v1 with 0,2 hides the velocities)")
    g.add_argument("--sticky_actions", type=float, default=None, metavar="FLOAT",
                   help="atari: the probability that the game repeats the previous action, in "
                        "training and evaluation (default: 0.25, Machado et al. 2018; 0: the "
                        "protocol of most published Pong figures)")
    g.add_argument("--progress", type=_parse_bool, nargs="?", const=True, default=True,
                   metavar="BOOL",
                   help="one line for the whole run every --print_every_s (steps of the budget, "
                        "rates, the learner's wait for data, the last evaluation, the time "
                        "left), rewritten in place on a terminal; false: each node prints its "
                        "own rows (default: true)")
    g.add_argument("-h", "--help", action="store_true", help="show the flags and exit")
    return p


def _field_default(field: dataclasses.Field, defaults: dict) -> Any:
    if field.name in defaults:
        return defaults[field.name]
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return field.default  # MISSING: a field the user must give.


def _add_dataclass_flags(parser: argparse.ArgumentParser, cls: type, defaults: dict,
                         title: str) -> None:
    """One flag per init field of `cls`, under `title`, with its source comment as help."""
    comments = field_comments(cls)
    group = parser.add_argument_group(title)
    for field in dataclasses.fields(cls):
        if not field.init:
            continue
        default = _field_default(field, defaults)
        options: dict[str, Any] = dict(help=flag_help(comments.get(field.name, ""), default))
        if default is dataclasses.MISSING:  # No default: the user must give it.
            options.update(required=True, metavar="VALUE")
        else:
            kind = _flag_type(default)
            options.update(type=kind, default=default, metavar=_METAVARS.get(kind, "VALUE"))
        if isinstance(default, bool):  # `--flag` alone means true.
            options.update(nargs="?", const=True)
        group.add_argument(f"--{field.name}", **options)


def _add_agent_flags(parser: argparse.ArgumentParser, agent: str, env: str,
                     builder_class: type) -> None:
    """The agent's config flags, with the environment's preset as their defaults."""
    preset = builder_class.preset(env)
    title = f"{agent} flags ({builder_class.config_class.__name__}"
    title += f", {env} preset applied)" if preset else ")"
    try:
        _add_dataclass_flags(parser, builder_class.config_class, preset, title)
    except argparse.ArgumentError as e:  # A field named like a run or program flag.
        name = (e.argument_name or "").lstrip("-")
        raise UsageError(f"--agent: {builder_class.config_class.__name__}.{name} clashes with the run, "
                         f"program or ray flag --{name}; rename the field") from None


def _tag(text: str) -> str:
    """A name usable as one path component (`gym:CartPole-v1` -> `gym-CartPole-v1`)."""
    return text.replace(":", "-").replace("/", "-").replace(os.sep, "-")


@dataclasses.dataclass
class RunSpec:
    """Everything a run needs, validated."""

    agent: str
    env: str
    launch: str
    logdir: str
    fresh: bool
    agent_config: Any
    program_config: Any
    builder_class: Any  # The agent: an ActorLearnerBuilder subclass.
    ray_config: Any = None
    observation_indices: tuple[int, ...] = ()
    private_network: bool = True
    # The preset values in effect: {"family", "config": {...}, "program": {...}}.
    preset: dict = dataclasses.field(default_factory=dict)
    progress: bool = True  # One consolidated progress line, not each node's rows.
    sticky_actions: float | None = None  # atari: the protocol's sticky-action probability.

    @property
    def on_cluster(self) -> bool:
        """Whether the nodes join an existing Ray cluster (so the replay may be on another host)."""
        return self.launch == "ray" and bool(self.ray_config.ray_address)


def parse(argv: Sequence[str]) -> RunSpec | None:
    """Parses and validates flags; returns None after printing --help."""
    from agentkit.config import ConfigError
    from launch_programs.program_config import ProgramConfig
    from launch_programs.ray_launcher import RayConfig
    from launch_programs.registry import AgentError, get_agent

    base = _base_parser()
    known, _ = base.parse_known_args(argv)
    try:  # Before any flag of the agent's is read: they depend on which agent it is.
        builder_class = get_agent(known.agent)
    except AgentError as e:
        raise UsageError(str(e)) from None
    except KeyboardInterrupt:
        if signal_received():  # Ctrl-C during a slow import: the command stops.
            raise
        raise UsageError(f"--agent={known.agent}: loading it raised KeyboardInterrupt "
                         f"(no signal came: the agent's own code raised it)") from None
    parser = _base_parser()
    program_preset = builder_class.program_preset(known.env)
    unknown = sorted(set(program_preset) - {f.name for f in dataclasses.fields(ProgramConfig)})
    if unknown:
        raise UsageError(f"--agent={known.agent}: its program preset for {known.env} names "
                         f"{', '.join(unknown)}, which are no program flags")
    title = "program flags (nodes, budget, evaluation, checkpoints"
    title += f"; {known.agent}'s {known.env} preset applied)" if program_preset else ")"
    _add_dataclass_flags(parser, ProgramConfig, program_preset, title)
    _add_dataclass_flags(parser, RayConfig, {}, "ray flags (with --launch=ray)")
    _add_agent_flags(parser, known.agent, known.env, builder_class)
    if known.help:
        parser.print_help()
        return None
    args = parser.parse_args(argv)
    if args.launch not in LAUNCHERS:
        raise UsageError(f"--launch: unknown launcher '{args.launch}'; allowed: {', '.join(LAUNCHERS)}")
    values = vars(args)

    def build(cls: type) -> Any:
        return cls(**{f.name: values[f.name] for f in dataclasses.fields(cls) if f.init})

    try:
        program_config = build(ProgramConfig)
        agent_config = build(builder_class.config_class)
        ray_config = build(RayConfig)
    except ConfigError as e:
        raise UsageError(str(e)) from None
    preset = _applied_preset(builder_class, args.env, values, program_config, agent_config)
    sticky_actions = _sticky_actions(args.env, args.sticky_actions)
    logdir = args.logdir or os.path.join("runs", f"{_tag(args.agent)}-{_tag(args.env)}-s{args.seed}")
    # `--logdir=~/runs/x` (a shell leaves `~` after `=` as it is): the home folder, as a user
    # means, never a folder named `~` here (that a later `rm -rf ~` would turn into a disaster).
    logdir = os.path.expanduser(logdir)
    # Absolute: node processes need not share this process's working directory.
    logdir = os.path.abspath(logdir)
    return RunSpec(args.agent, args.env, args.launch, logdir, args.fresh, agent_config,
                   program_config, builder_class, ray_config, tuple(args.observation_indices),
                   args.private_network, preset, args.progress, sticky_actions)


def _sticky_actions(env: str, given: float | None) -> float | None:
    """The run's sticky-action probability: the flag, else 0.25 for atari: (None elsewhere);
    the flag for another family, or outside [0, 1), is a UsageError."""
    from components.environments import UnknownEnvironmentError
    from components.environments.atari import STICKY_ACTION_PROBABILITY
    from components.environments.registry import check_sticky_actions_for

    if given is None:
        return STICKY_ACTION_PROBABILITY if env.startswith("atari:") else None
    try:
        return check_sticky_actions_for(env, given)
    except UnknownEnvironmentError as e:
        raise UsageError(str(e)) from None


def _applied_preset(builder_class: type, env: str, values: dict, program_config: Any,
                    agent_config: Any) -> dict[str, Any]:
    """The preset values in effect: those of the agent's presets for `env` that differ from
    the dataclass defaults and that no flag overrode."""
    from components.environments import environment_family

    def in_effect(preset: dict, config: Any) -> dict:
        defaults = {f.name: _field_default(f, {}) for f in dataclasses.fields(config) if f.init}
        return {k: v for k, v in preset.items()
                if values[k] == v and defaults.get(k) != v}

    applied = {"family": environment_family(env),
               "config": in_effect(builder_class.preset(env), agent_config),
               "program": in_effect(builder_class.program_preset(env), program_config)}
    return applied


def _environment_factory(name: str, seed: int, evaluation: bool,
                         observation_indices: tuple[int, ...] = (),
                         sticky_actions: float | None = None):
    from components.environments import make_environment

    return make_environment(name, seed=seed, evaluation=evaluation,
                            observation_indices=observation_indices,
                            sticky_actions=sticky_actions)


def _vector_environments(name: str, seeds: list, evaluation: bool,
                         sticky_actions: float | None = None):
    from components.environments import make_vector_environment

    return make_vector_environment(name, seeds, evaluation, sticky_actions=sticky_actions)


def batched_environment_factory(run: RunSpec):
    """With --atari_vector_env, each actor group's games in one native vector environment."""
    from components.environments import UnknownEnvironmentError

    if not run.program_config.atari_vector_env:
        return None
    factory = functools.partial(_vector_environments, run.env,
                                sticky_actions=run.sticky_actions)
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
    from launch_programs.agent_program import check_inference

    factory = functools.partial(_environment_factory, run.env,
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
        builder.make_networks(spec=spec)
    except (ConfigError, ValueError) as e:
        raise UsageError(f"--agent={run.agent} does not fit --env={run.env}: {e}") from None
    return builder, factory, spec


def _isolate(argv: Sequence[str]) -> None:
    """Before anything starts a thread: a local run (threads, or a Ray of its own) moves into
    private namespaces. Reads only the flags it needs; a bad value is left to the full parse."""
    scan = _Parser(add_help=False, allow_abbrev=False)
    scan.add_argument("--launch", default="threads")
    scan.add_argument("--ray_address", default="")
    scan.add_argument("--private_network", type=_parse_bool, nargs="?", const=True, default=True)
    scan.add_argument("-h", "--help", action="store_true")
    try:
        known, _ = scan.parse_known_args(argv)
    except UsageError:
        return
    local = known.launch == "threads" or not known.ray_address
    if known.private_network and not known.help and local:
        from launch_programs.isolation import isolate_local_run

        print(f"[run] {isolate_local_run()}", flush=True)


def main(argv: Sequence[str] | None = None, isolate: bool = False) -> int:
    """The command line. With `isolate` (as `python -m launch_programs.run`), a local run
    first moves into private namespaces (launch_programs.isolation)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    # TensorFlow's INFO lines (its CPU-feature notice on every import) would stand before an
    # error's one line; warnings and errors still show.
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")
    in_main_thread = threading.current_thread() is threading.main_thread()
    signals = StopSignals().install() if in_main_thread else StopSignals()
    try:
        if isolate:
            with signals.held():  # Not cut inside its fork; answered as _main starts.
                _isolate(argv)
        return _main(argv, signals)
    finally:
        signals.uninstall()


def _check_before_launch(run: RunSpec):
    """Every check that needs no process started: the ports, the cluster, the logdir and a
    resume (last: it takes the logdir's lock).

    Returns the inspected run directory; raises ValueError (one line) on failure.
    """
    from components.replay import port_in_use
    from launch_programs.ray_launcher import check_ray_address
    from launch_programs.run_dir import RunDir

    port = run.program_config.replay_port
    if port and not run.on_cluster and port_in_use(port):
        raise UsageError(f"--replay_port: port {port} is in use")
    if run.on_cluster:
        check_ray_address(run.ray_config.ray_address)
    return RunDir.inspect(run)


@dataclasses.dataclass
class _Start:
    """What a life is launched with, once every check passed and the logdir is open."""

    run: RunSpec
    run_dir: Any
    program: Any
    launcher: Any
    life_start: float  # time.time() as this life began.
    start: float  # The run's start: wall_time_s continues over lives.


def _main(argv: list[str], signals: StopSignals) -> int:
    started: _Start | None = None
    run_dir = launcher = None
    try:
        try:
            signals.arm()  # Nothing started yet: a signal stops the command at once.
            run = parse(argv)
            if run is None:
                return 0
            run_dir, launcher, started = _start(run, signals)
        except KeyboardInterrupt:  # A signal before the logdir was touched.
            print("[run] stopped before the run started: nothing in --logdir changed",
                  file=sys.stderr, flush=True)
            return signals.exit_code
        except (UsageError, ValueError) as e:  # Placement and Ray address errors included.
            print(f"error: {e}", file=sys.stderr)
            return 2
        if started is None:
            return 0
        return _run_life(started, signals)
    finally:
        if launcher is not None:
            launcher.close()  # Under ray: no node process outlives the run.
        if run_dir is not None:
            run_dir.close()  # The logdir's lock.


def _start(run: RunSpec, signals: StopSignals):
    """Checks everything that can refuse the run, then opens the logdir (only then does
    `--fresh` clear it). Returns (run_dir, launcher, _Start); _Start is None when the run has
    nothing left to do. The caller closes what it gets, also when this raises."""
    from launch_programs.agent_program import make_agent_program
    from launch_programs.devices import configure_tensorflow
    from launch_programs.ray_launcher import RayLauncher
    from launch_programs.threads import ThreadsLauncher

    configure_tensorflow()  # GPU memory growth, before prepare() runs the first op.
    builder, factory, spec = prepare(run)
    batched_factory = batched_environment_factory(run)
    run_dir = _check_before_launch(run)
    try:
        budget = run.program_config.max_actor_steps
        if run_dir.budget_spent(budget):  # Rerunning a finished run changes nothing in it.
            print(f"[run] {run.logdir} already took its budget (actor_steps="
                  f"{int(run_dir.initial_counts['actor_steps'])} >= --max_actor_steps={budget}): "
                  f"nothing to run; raise --max_actor_steps to go on", flush=True)
            run_dir.close()
            return None, None, None
        life_start = time.time()
        start = life_start - run_dir.prior_wall_s  # The run's start: wall_time_s continues.
        node_config = run.program_config
        if run.progress and node_config.print_every_s > 0:  # The driver's line stands for theirs.
            node_config = dataclasses.replace(node_config, print_every_s=0)
        program = make_agent_program(builder, factory, spec, node_config, run.logdir, start,
                                     name=run.agent, initial_counts=run_dir.initial_counts,
                                     batched_environment_factory=batched_factory)
        launcher = RayLauncher(program, run.ray_config) if run.launch == "ray" else \
            ThreadsLauncher(program)
    except BaseException:
        run_dir.close()
        raise
    try:
        if run.launch == "ray" and not run.on_cluster and os.environ.get("RAY_ADDRESS"):
            print(f"[run] RAY_ADDRESS={os.environ['RAY_ADDRESS']} is ignored: a run joins a "
                  f"cluster only with --ray_address; this one starts a Ray of its own", flush=True)
        if run.on_cluster:
            print(f"[run] joining the Ray cluster at {run.ray_config.ray_address}", flush=True)
        if run.launch == "ray":
            launcher.start()  # Ray up and the placement planned: refusals come before the clear.
        with signals.held():  # A signal during the clear is answered once it is done.
            run_dir.open()
    except BaseException:
        launcher.close()
        run_dir.close()
        raise
    return run_dir, launcher, _Start(run, run_dir, program, launcher, life_start, start)


def _run_life(started: _Start, signals: StopSignals) -> int:
    """Launches the program, stops it on a signal, writes the summary; the exit code."""
    from agentkit.config import as_dict
    from launch_programs.program import LaunchResult
    from launch_programs.progress import ProgressReader, ProgressReporter
    from launch_programs.run_dir import describe_changes, restarts_of_all_lives
    from launch_programs.summary import write_summary

    run, run_dir, program, launcher = started.run, started.run_dir, started.program, started.launcher
    start = started.start
    initial_counts = run_dir.initial_counts
    if run_dir.kept:
        print(f"[run] --fresh kept {len(run_dir.kept)} files that no run wrote: "
              f"{', '.join(run_dir.kept[:5])}{' ...' if len(run_dir.kept) > 5 else ''}", flush=True)
    if initial_counts is not None:  # Resume: counts, budget and wall time go on from there.
        print(f"[run] resuming from {run.logdir}: actor_steps="
              f"{int(initial_counts.get('actor_steps', 0))} learner_steps="
              f"{int(initial_counts.get('learner_steps', 0))} wall_time_s="
              f"{run_dir.prior_wall_s:.0f} (life {len(run_dir.lives)})", flush=True)
        if run_dir.changed:
            print(f"[run] changed on resume (recorded in run.json): "
                  f"{describe_changes(run_dir.changed)}", flush=True)
        if run_dir.unchecked:
            print(f"[run] {run.logdir} has no run.json (an older run): its settings were not "
                  f"compared with this command's", flush=True)
    every_s = run.program_config.print_every_s
    reader = ProgressReader(run.logdir)  # The nodes' CSVs, read once for line and monitor.
    monitor = _make_monitor(reader, start, program, run.program_config)
    reporter = None
    if run.progress and every_s > 0:
        reporter = ProgressReporter(run.logdir, run.program_config.max_actor_steps, every_s,
                                    monitor=monitor, reader=reader)
    network = _network_line(run)
    if network:
        print(f"[run] {network}", flush=True)
    preset_line = describe_preset(run.agent, run.preset)
    if preset_line:
        print(f"[run] {preset_line}", flush=True)
    protocol = "" if run.sticky_actions is None else f" (sticky actions {run.sticky_actions:g})"
    print(f"[run] {run.agent} on {run.env}{protocol}, launch={run.launch}, "
          f"{run.program_config.num_actors} actors x {run.program_config.num_envs_per_actor} envs, "
          f"logdir={run.logdir}", flush=True)
    try:
        signals.arm(launching=True)
        monitor.start()
        if reporter is not None:
            reporter.start()
        result = launcher.launch()
    except KeyboardInterrupt:  # The signal came before the launcher could catch it.
        result = LaunchResult("interrupted", {})
    finally:
        signals.disarm()
        monitor.stop()  # Its last sample: the end of the run.
        if reporter is not None:
            reporter.report()  # Where the run ended.
            reporter.stop()
    counter = result.objects.get("counter")
    counts = dict(initial_counts or {})
    if counter is not None:
        try:
            counts = counter.checkpoint()  # Saved at every stop, returned for the summary.
        except ValueError as e:  # A checkpoint that cannot be written (a full disk).
            print(f"error: {e}", file=sys.stderr)
            counts = counter.get_counts()
    # Before close(): under ray these are calls to the nodes.
    replay_tables = _ask_node(result, "replay", "info")
    startup = _startup(launcher, result)
    inference = _ask_node(result, "inference", "stats")
    launcher.close()  # Under ray: no node process outlives the run.
    if signals.received is not None and result.status == "completed":
        result.status = "interrupted"  # The signal came as the program ended on its own.
    extra = {"network": _network_status(run), "preset": run.preset, **monitor.summary()}
    if replay_tables:
        extra["replay"] = replay_tables
    if startup:
        extra["startup"] = startup
    if inference:
        extra["inference"] = inference
    if run.observation_indices:
        extra["observation_indices"] = list(run.observation_indices)
    if run.sticky_actions is not None:
        extra["sticky_actions"] = run.sticky_actions
    if signals.received is not None:
        extra["signal"] = signal.Signals(signals.received).name
    if result.error is not None:
        extra["error"] = _one_line(result.error)
    life_wall = time.time() - started.life_start
    restarts = dict(launcher.restarts) if run.launch == "ray" else None
    run_dir.end_life(result.status, counts, life_wall, restarts)
    if any(life.get("launch") == "ray" for life in run_dir.lives):
        extra["node_restarts"] = restarts_of_all_lives(run_dir.lives)
    extra["lives"] = run_dir.lives
    try:
        summary = write_summary(
            run.logdir, run.agent, run.env, run.launch, result.status, counts, time.time() - start,
            as_dict(run.agent_config), as_dict(run.program_config), THRESHOLDS.get(run.env), extra,
        )
    except OSError as e:
        print(f"error: cannot write {os.path.join(run.logdir, 'summary.json')}: "
              f"{e.strerror or e}", file=sys.stderr)
        return 1
    if "damaged_csv_rows" in summary:
        print(f"[run] skipped damaged CSV rows (a process died mid-write): "
              f"{summary['damaged_csv_rows']}", file=sys.stderr, flush=True)
    print(
        f"[summary] status={summary['status']} actor_steps={summary['actor_steps']} "
        f"learner_steps={summary['learner_steps']} wall_time_s={summary['wall_time_s']} "
        f"eval_return_mean_last10={summary['eval_return_mean_last10']} "
        f"-> {os.path.join(run.logdir, 'summary.json')}",
        flush=True,
    )
    if result.error is not None:
        if not _expected(result.error.error):
            print(result.error.formatted, file=sys.stderr)
        print(f"error: {_one_line(result.error)}", file=sys.stderr)
        return 1
    return signals.exit_code if result.status == "interrupted" else 0


def _startup(launcher, result) -> dict[str, float]:
    """Seconds from the command's start to each start-up phase of this life that happened:
    Ray up (ray), every node built, the learner's first step."""
    times = dict(getattr(launcher, "timings", {}))
    first = _ask_node(result, "learner", "get_first_step_time")
    if first is not None:
        times["first_learner_step"] = first
    return {f"{phase}_s": round(t - COMMAND_START, 2) for phase, t in times.items()}


def _ask_node(result, name: str, method: str) -> Any:
    """What node `name`'s `method()` answers at the end of this life, None when the program
    has no such node or it is gone: the summary goes on without the figure. A node that
    failed the run is not asked (a remote call to one lost for good retries for minutes).
    The replay's `info()` (each table's inserts, set against the counter's actor steps, shows
    what was lost) and the inference node's `stats()` go into the summary so."""
    node = result.objects.get(name)
    if node is None or (result.error is not None and result.error.node == name):
        return None
    try:
        return getattr(node, method)()
    except Exception:  # noqa: BLE001 - a node gone with the run: no figure.
        return None


def _make_monitor(reader, start: float, program, program_config):
    """The driver's monitor of memory and replay; its counts come from the nodes' CSVs
    (`reader`, a ProgressReader). It reads the replay on this host (where both launchers
    start it)."""
    from launch_programs.monitor import RunMonitor

    def counts() -> tuple[float, float]:
        progress = reader.read()
        return progress.actor_steps, progress.learner_steps

    replay = program.nodes.get("replay")
    port = replay.kwargs.get("port") if replay is not None else None
    every_s = program_config.print_every_s or 10.0  # With the progress line, or every 10 s.
    return RunMonitor(reader.logdir, start, f"localhost:{port}" if port else None, counts=counts,
                      every_s=min(every_s, 10.0))


def describe_preset(agent: str, preset: dict) -> str | None:
    """One line naming the preset values in effect, or None when there are none."""
    if not preset or not (preset.get("config") or preset.get("program")):
        return None
    from launch_programs.flag_help import format_default

    parts = [f"{k}={format_default(v)}" for k, v in {**preset["config"],
                                                      **preset["program"]}.items()]
    return (f"preset: {agent} for {preset['family']} environments: {' '.join(parts)} "
            f"(a flag given overrides its value)")


def _network_status(run: RunSpec) -> str:
    """Who can reach the run's servers, for summary.json."""
    from launch_programs.isolation import isolation_status

    if run.on_cluster:
        return "cluster: the replay listens on every interface of its host, without authentication"
    return isolation_status()


def _network_line(run: RunSpec) -> str | None:
    """One line at start when a run's replay server is reachable from the network."""
    from launch_programs.isolation import ISOLATED

    status = _network_status(run)
    if status == ISOLATED:
        return None
    if not run.private_network:
        status = "--private_network=false"
    return f"replay server reachable from the network ({status}); see docs/launchers.md"


def _expected(error: BaseException) -> bool:
    """Failures whose message says all (a file that cannot be read or written): no traceback."""
    from agentkit.checkpointing import CheckpointError

    return isinstance(error, (CheckpointError, OSError))


def _one_line(error) -> str:
    """A NodeError as one line: the node, and the cause's own message for an expected failure."""
    from launch_programs.program import first_line

    return f"{error.node}: {error.error}" if _expected(error.error) else first_line(error)


if __name__ == "__main__":
    sys.exit(main(isolate=True))
