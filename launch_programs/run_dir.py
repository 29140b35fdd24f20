"""The run directory (`--logdir`): what a run may clear, resume and must not mix.

A directory becomes a run's when the run writes its marker file there.
`--fresh` clears only a marked directory (or an unmarked one that holds
nothing but a run's files: a run from before the marker), and only the
files a run writes (a user's own files next to them stay). `run.json` records the agent, the
environment and every setting; a rerun in the same directory resumes only
if it matches them, except for the settings that may change on resume
(`RESUMABLE`: the step budget, logging, where the nodes run), which are
recorded with each life. Each life (one start of the command) is recorded
too, so wall time and rates continue across lives.

Every check runs before anything is written: `RunDir.inspect()` reads and
refuses; `open()` (after the launch's other checks passed) clears, creates
and records.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import shutil
from typing import Any

from launch_programs.counter_node import read_saved_counts
from launch_programs.summary import to_json, write_json

MARKER = ".agentkit-run"
RECORD = "run.json"
# The files and folders a run writes at the top of its logdir (loggers write `<node kind>.csv`).
RUN_FILES = ("checkpoints", "tb", "summary.json", RECORD, MARKER)
NODE_LOGS = ("actor", "learner", "evaluator", "monitor")  # monitor.csv: the driver's.
# Settings that may differ between lives of one run: the step budget, logging and checkpoint
# periods, and where the nodes run. Every other setting is part of what the run is.
RESUMABLE = frozenset({"max_actor_steps", "print_every_s", "checkpoint_every_s", "replay_port",
                       "launch", "ray"})


class RunDirError(ValueError):
    """The logdir cannot be used as asked; the message names it and what to do."""


def run_files(logdir: str) -> list[str]:
    """The paths under `logdir` that a run wrote (those `--fresh` removes)."""
    names = list(RUN_FILES)
    for label in NODE_LOGS:
        names += [f"{label}.csv", f".{label}.csv.lock", f"{label}.csv.tmp"]
    names += [f"{name}.tmp" for name in ("summary.json", RECORD)]
    return [os.path.join(logdir, n) for n in names if os.path.lexists(os.path.join(logdir, n))]


def settings(run) -> dict[str, Any]:
    """What `run.json` records of a run (a launch_programs.run.RunSpec), JSON values only."""
    from agentkit.config import as_dict

    return to_json({
        "agent": run.agent, "env": run.env, "observation_indices": list(run.observation_indices),
        "config": as_dict(run.agent_config), "program": as_dict(run.program_config),
        "launch": run.launch, "ray": as_dict(run.ray_config) if run.ray_config else {},
    })


def differences(old: dict[str, Any], new: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    """{flag: (old, new)} over the recorded settings; nested configs by field name."""
    changed = {}
    for key in sorted(set(old) | set(new)):
        if key == "lives":
            continue
        a, b = old.get(key), new.get(key)
        if key in ("config", "program") and isinstance(a, dict) and isinstance(b, dict):
            for name in sorted(set(a) | set(b)):
                if a.get(name) != b.get(name):
                    changed[name] = (a.get(name), b.get(name))
        elif a != b:
            changed[key] = (a, b)
    return changed


def describe_changes(changed: dict[str, tuple[Any, Any]]) -> str:
    """`--discount 0.99 -> 0.5, ...`: the differing settings as the user's flags."""
    return ", ".join(f"--{name} {a!r} -> {b!r}" for name, (a, b) in changed.items())


class RunDir:
    """One run's logdir: checked by `inspect`, then opened for this life."""

    def __init__(self, logdir: str, fresh: bool, current: dict[str, Any]):
        self.logdir = logdir
        self.fresh = fresh
        self.current = current
        self.lives: list[dict[str, Any]] = []
        self.changed: dict[str, tuple[Any, Any]] = {}
        self.initial_counts: dict[str, float] | None = None
        self.prior_wall_s = 0.0  # Wall time of the run's earlier lives.
        self.unchecked = False  # Resuming a run that has no run.json (nothing to compare).

    @classmethod
    def inspect(cls, run) -> RunDir:
        """Checks that `run` may use its logdir; reads what a resume continues from."""
        self = cls(run.logdir, run.fresh, settings(run))
        path = self.logdir
        if os.path.lexists(path) and not os.path.isdir(path):
            raise RunDirError(f"--logdir: {path} is a file, not a directory")
        if not os.path.isdir(path):
            return self
        marked = os.path.exists(os.path.join(path, MARKER))
        if self.fresh:
            # Unmarked (a run from before the marker existed) is fine when it holds nothing else.
            own = {os.path.basename(p) for p in run_files(path)}
            foreign = sorted(set(os.listdir(path)) - own)
            if not marked and foreign:
                raise RunDirError(
                    f"--fresh: {path} is not a run directory of this toolkit (no {MARKER} marker, "
                    f"and it holds {', '.join(foreign[:3])}{' ...' if len(foreign) > 3 else ''}), "
                    f"so nothing in it is deleted; give a new --logdir")
            return self
        record_path = os.path.join(path, RECORD)
        if os.path.exists(record_path):
            try:
                with open(record_path) as f:
                    record = json.load(f)
            except (OSError, ValueError) as e:
                raise RunDirError(f"--logdir: {record_path} is damaged ({e}); rerun with --fresh "
                                  f"or another --logdir") from None
            self.changed = differences(record, self.current)
            fixed = {k: v for k, v in self.changed.items() if k not in RESUMABLE}
            if fixed:
                raise RunDirError(
                    f"--logdir: {path} holds a run with other settings ({describe_changes(fixed)}); "
                    f"rerun with --fresh to replace it, or use another --logdir")
            self.lives = list(record.get("lives", []))
        saved = read_saved_counts(path)  # A damaged file fails here, naming it.
        if saved is not None:
            self.unchecked = not os.path.exists(record_path)
            self.initial_counts, counter_wall = saved
            self.prior_wall_s = max(counter_wall, _recorded_wall(self.lives))
        learner = os.path.join(path, "checkpoints", "learner.npz")
        if os.path.exists(learner):
            from agentkit.checkpointing import read_checkpoint

            read_checkpoint(learner)
        return self

    def budget_spent(self, max_actor_steps: int) -> bool:
        """Whether a resumed run already took its whole step budget (nothing left to run)."""
        return bool(self.initial_counts) and self.initial_counts.get("actor_steps", 0) >= max_actor_steps

    def open(self) -> None:
        """Clears the run's own files (`--fresh`), creates the logdir, records this life."""
        try:
            if self.fresh:
                for item in run_files(self.logdir):
                    if os.path.isdir(item) and not os.path.islink(item):
                        shutil.rmtree(item)
                    else:
                        os.remove(item)
            os.makedirs(self.logdir, exist_ok=True)
            with open(os.path.join(self.logdir, MARKER), "w") as f:
                f.write("A run directory of agentkit: --fresh may clear the run's files here.\n")
        except OSError as e:
            raise RunDirError(f"--logdir: cannot write to {self.logdir}: {e.strerror or e}") from None
        counts = self.initial_counts or {}
        self.lives.append({
            "life": len(self.lives) + 1,
            "started_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "launch": self.current["launch"],
            "changed": {k: list(v) for k, v in self.changed.items()},
            "wall_time_s_before": round(self.prior_wall_s, 2),
            "actor_steps_before": int(counts.get("actor_steps", 0)),
            "learner_steps_before": int(counts.get("learner_steps", 0)),
        })
        self._write()

    def end_life(self, status: str, counts: dict[str, float], life_wall_s: float,
                 node_restarts: dict[str, int] | None = None) -> None:
        """Records how this life ended (not reached when the process is killed)."""
        life = self.lives[-1]
        if node_restarts is not None:
            life["node_restarts"] = dict(node_restarts)
        actor, learner = int(counts.get("actor_steps", 0)), int(counts.get("learner_steps", 0))
        rate = (actor - life["actor_steps_before"]) / max(life_wall_s, 1e-9)
        life.update(status=status, wall_time_s=round(life_wall_s, 2), actor_steps=actor,
                    learner_steps=learner, actor_steps_per_s=round(rate, 1))
        with contextlib.suppress(OSError):  # The summary reports a full disk; this is secondary.
            self._write()

    def _write(self) -> None:
        write_json(os.path.join(self.logdir, RECORD), dict(self.current, lives=self.lives))


def restarts_of_all_lives(lives: list[dict[str, Any]]) -> dict[str, int]:
    """Node restarts summed over the lives that recorded theirs (a killed life could not)."""
    total: dict[str, int] = {}
    for life in lives:
        for name, count in life.get("node_restarts", {}).items():
            total[name] = total.get(name, 0) + count
    return total


def _recorded_wall(lives: list[dict[str, Any]]) -> float:
    """The run's wall time by its record: the last life's start offset plus its length."""
    if not lives:
        return 0.0
    last = lives[-1]
    return float(last.get("wall_time_s_before", 0.0)) + float(last.get("wall_time_s", 0.0))
