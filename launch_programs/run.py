"""The command line: `python -m launch_programs.run --agent=dqn --env=gym:CartPole-v1 ...`.

Every agent config field is also a flag (`--batch_size=64`). Bad input fails
before anything starts, with one line naming the flag. Progress prints while
the program runs; Ctrl-C stops it cleanly; `summary.json` is written at
every exit. The flags are parsed in `launch_programs.flags`, the checks before
launch are `launch_programs.preflight`; this module runs a life of the run:
signals, the launch, the summary.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import sys
import threading
import time
from collections.abc import Sequence
from typing import Any

from launch_programs.flags import (  # noqa: F401 - parse, RunSpec, describe_preset: public here too.
    Parser,
    RunSpec,
    UsageError,
    describe_preset,
    parse,
    parse_bool,
)
from launch_programs.preflight import (
    batched_environment_factory,
    check_before_launch,
    network_line,
    network_status,
    prepare,
)
from launch_programs.stop_signals import StopSignals

COMMAND_START = time.time()  # The start-up figures in summary.json count from here.

# The target return reported in summary.json as `first_reached`, where known.
THRESHOLDS = {"gym:CartPole-v1": 475.0, "gym:CartPole-v0": 195.0, "gym:Pendulum-v1": -250.0}


def _isolate(argv: Sequence[str]) -> None:
    """Before anything starts a thread: a local run (threads, or a Ray of its own) moves into
    private namespaces. Reads only the flags it needs; a bad value is left to the full parse."""
    scan = Parser(add_help=False, allow_abbrev=False)
    scan.add_argument("--launch", default="threads")
    scan.add_argument("--ray_address", default="")
    scan.add_argument("--private_network", type=parse_bool, nargs="?", const=True, default=True)
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
            # Not cut inside its fork; answered as _main starts (held until it arms them).
            with signals.held(until_armed=True):
                _isolate(argv)
        return _main(argv, signals)
    finally:
        signals.uninstall()



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
        except Exception as e:
            # A signal that cut an import short can surface as another error (numpy turns
            # the KeyboardInterrupt into an ImportError): the run stops all the same.
            if signals.received is not None:
                return _stopped_before_start(signals)
            if not isinstance(e, (UsageError, ValueError)):
                raise
            print(f"error: {e}", file=sys.stderr)  # Placement and Ray address errors too.
            return 2
        except KeyboardInterrupt:  # A signal before the logdir was touched.
            return _stopped_before_start(signals)
        if started is None:
            return 0
        return _run_life(started, signals)
    finally:
        if launcher is not None:
            launcher.close()  # Under ray: no node process outlives the run.
        if run_dir is not None:
            run_dir.close()  # The logdir's lock.


def _stopped_before_start(signals: StopSignals) -> int:
    print("[run] stopped before the run started: nothing in --logdir changed",
          file=sys.stderr, flush=True)
    return signals.exit_code


def _start(run: RunSpec, signals: StopSignals):
    """Checks everything that can refuse the run, then opens the logdir (only then does
    `--fresh` clear it). Returns (run_dir, launcher, _Start); _Start is None when the run has
    nothing left to do. The caller closes what it gets, also when this raises."""
    from launch_programs.agent_program import make_agent_program
    from launch_programs.devices import configure_tensorflow
    from launch_programs.memory import check_memory
    from launch_programs.ray_launcher import RayLauncher
    from launch_programs.threads import ThreadsLauncher

    configure_tensorflow()  # GPU memory growth, before prepare() runs the first op.
    builder, factory, spec = prepare(run)
    check_memory(run, builder, factory, spec)
    batched_factory = batched_environment_factory(run)
    run_dir = check_before_launch(run)
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
        if run_dir.learner_steps_lost:
            print(f"[run] the learner's checkpoint is at step {run_dir.learner_checkpoint_steps}: "
                  f"the last life did {run_dir.learner_steps_lost} updates after it that were not "
                  f"saved (it was killed); they are done again, and learner_steps counts them "
                  f"again (run.json: learner_steps_lost)", flush=True)
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
    network = network_line(run)
    if network:
        print(f"[run] {network}", flush=True)
    preset_line = describe_preset(run.agent, run.preset)
    if preset_line:
        print(f"[run] {preset_line}", flush=True)
    protocol = "" if run.sticky_actions is None else f" (sticky actions {run.sticky_actions:g})"
    print(f"[run] {run.agent} on {run.env}{protocol}, launch={run.launch}, "
          f"{run.program_config.num_actors} actors x {run.program_config.num_envs_per_actor} envs, "
          f"logdir={run.logdir}", flush=True)
    watch = _make_memory_watch(run.program_config, signals)
    try:
        signals.arm(launching=True)
        watch.start()
        monitor.start()
        if reporter is not None:
            reporter.start()
        result = launcher.launch()
    except KeyboardInterrupt:  # The signal came before the launcher could catch it.
        result = LaunchResult("interrupted", {})
    finally:
        signals.disarm()
        watch.stop()
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
    extra = {"network": network_status(run), "preset": run.preset, **monitor.summary()}
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
    if signals.reason is not None:
        extra["stopped_by"] = signals.reason
    if result.error is not None:
        extra["error"] = _one_line(result.error)
    life_wall = time.time() - started.life_start
    restarts = dict(launcher.restarts) if run.launch == "ray" else None
    nodes_up = getattr(launcher, "timings", {}).get("nodes_up")
    startup_s = None if nodes_up is None else nodes_up - started.life_start
    run_dir.end_life(result.status, counts, life_wall, restarts, startup_s)
    if any(life.get("launch") == "ray" for life in run_dir.lives):
        extra["node_restarts"] = restarts_of_all_lives(run_dir.lives)
    extra["lives"] = run_dir.lives
    lost = sum(life.get("learner_steps_lost", 0) for life in run_dir.lives)
    if lost:
        extra["learner_steps_lost"] = lost
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
    if signals.reason is not None and signals.received is None:
        print(f"error: {signals.reason}", file=sys.stderr)
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


def _make_memory_watch(program_config, signals):
    """The watch that stops the run cleanly when the memory left falls below the floor."""
    from launch_programs.memory import available_bytes, memory_cgroup_folders, total_bytes
    from launch_programs.memory_watch import MemoryWatch, floor_bytes

    folders = memory_cgroup_folders()  # Found once: a run stays in its cgroup.
    floor = floor_bytes(program_config.min_free_memory_mb, total_bytes(folders=folders))
    return MemoryWatch(floor, lambda reason: signals.stop_for(reason, headline="memory low"),
                       read=lambda: available_bytes(folders=folders))


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
