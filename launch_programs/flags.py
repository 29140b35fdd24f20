"""The command line's flags: parsed and validated into a RunSpec, before anything starts.

Every agent config field is also a flag (`--batch_size=64`), with the agent's
preset for the environment's family as its default; program and Ray flags
likewise. A bad value raises UsageError, one line naming the flag.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
from collections.abc import Sequence
from typing import Any

from launch_programs.flag_help import field_comments, flag_help
from launch_programs.stop_signals import signal_received

LAUNCHERS = ("threads", "ray")


class UsageError(ValueError):
    """A flag holds a value that is not allowed (the message names the flag)."""


class Parser(argparse.ArgumentParser):
    def error(self, message: str):  # One line, not argparse's usage block.
        raise UsageError(message)


def parse_bool(text: str) -> bool:
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


def _flag_type(default: Any, annotation: Any = None):
    """The parser of a field's flag, from its default (None: from its annotation)."""
    if isinstance(default, bool):
        return parse_bool
    if isinstance(default, tuple):
        return _parse_ints
    if default is None:
        return float if "float" in str(annotation) else int
    return type(default)


_METAVARS = {parse_bool: "BOOL", _parse_ints: "INTS", int: "INT", float: "FLOAT", str: "STR"}


class _HelpFormatter(argparse.HelpFormatter):
    def __init__(self, prog: str):  # Wider flag column: most flags then keep help on their line.
        super().__init__(prog, max_help_position=34)


def base_parser() -> argparse.ArgumentParser:
    # Imported here, not at the top: the registry imports numpy, whose BLAS starts threads,
    # and `_isolate` needs this process single-threaded.
    from launch_programs.registry import AGENTS, ENTRY_POINT_GROUP

    p = Parser(prog="python -m launch_programs.run", add_help=False, allow_abbrev=False,
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
    g.add_argument("--private_network", type=parse_bool, nargs="?", const=True, default=True,
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
    g.add_argument("--progress", type=parse_bool, nargs="?", const=True, default=True,
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
            kind = _flag_type(default, field.type)
            options.update(type=kind, default=default, metavar=_METAVARS.get(kind, "VALUE"))
        if isinstance(default, bool):  # `--flag` alone means true.
            options.update(nargs="?", const=True)
        group.add_argument(f"--{field.name}", **options)


def agent_label(agent: str, builder_class: type) -> str:
    """What `--help` calls the agent: its name, or an external agent's builder class (not its
    `module:Class` path)."""
    return builder_class.__name__ if ":" in agent else agent


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

    base = base_parser()
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
    parser = base_parser()
    program_preset = builder_class.program_preset(known.env)
    unknown = sorted(set(program_preset) - {f.name for f in dataclasses.fields(ProgramConfig)})
    if unknown:
        raise UsageError(f"--agent={known.agent}: its program preset for {known.env} names "
                         f"{', '.join(unknown)}, which are no program flags")
    label = agent_label(known.agent, builder_class)
    title = "program flags (nodes, budget, evaluation, checkpoints"
    title += f"; {label}'s {known.env} preset applied)" if program_preset else ")"
    _add_dataclass_flags(parser, ProgramConfig, program_preset, title)
    _add_dataclass_flags(parser, RayConfig, {}, "ray flags (with --launch=ray)")
    _add_agent_flags(parser, label, known.env, builder_class)
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
    from agentkit.presets import environment_family

    def in_effect(preset: dict, config: Any) -> dict:
        defaults = {f.name: _field_default(f, {}) for f in dataclasses.fields(config) if f.init}
        return {k: v for k, v in preset.items()
                if values[k] == v and defaults.get(k) != v}

    applied = {"family": environment_family(env),
               "config": in_effect(builder_class.preset(env), agent_config),
               "program": in_effect(builder_class.program_preset(env), program_config)}
    return applied


def describe_preset(agent: str, preset: dict) -> str | None:
    """One line naming the preset values in effect, or None when there are none."""
    if not preset or not (preset.get("config") or preset.get("program")):
        return None
    from launch_programs.flag_help import format_default

    parts = [f"{k}={format_default(v)}" for k, v in {**preset["config"],
                                                      **preset["program"]}.items()]
    return (f"preset: {agent} for {preset['family']} environments: {' '.join(parts)} "
            f"(a flag given overrides its value)")
