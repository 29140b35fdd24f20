"""The run directory (`--logdir`): what a run may clear, resume and must not mix.

A directory becomes a run's when the run writes its marker file there.
A run uses an empty or new directory, a marked one, or an unmarked one that
holds nothing but a run's files (a run from before the marker);
`--fresh` deletes only the files a run writes (`run_files`: a user's own
files next to them stay). A run holds the directory's lock from its first
check to its end, and refuses a directory where another user could make
it write through a symbolic link. `run.json` records the agent, the
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
import fcntl
import json
import os
from typing import Any

from agentkit.files import open_for_writing
from launch_programs import run_files
from launch_programs.counter_node import checkpoint_path, read_saved_counts
from launch_programs.run_files import MARKER, RECORD
from launch_programs.summary import to_json, write_json

# Settings that may differ between lives of one run: the step budget, logging and checkpoint
# periods, and where the nodes run. Every other setting is part of what the run is.
RESUMABLE = frozenset({"max_actor_steps", "print_every_s", "checkpoint_every_s", "replay_port",
                       "min_free_memory_mb", "launch", "ray"})


class RunDirError(ValueError):
    """The logdir cannot be used as asked; the message names it and what to do."""


def settings(run) -> dict[str, Any]:
    """What `run.json` records of a run (a launch_programs.run.RunSpec), JSON values only."""
    from agentkit.config import as_dict

    return to_json({
        "agent": run.agent, "env": run.env, "observation_indices": list(run.observation_indices),
        **({} if run.sticky_actions is None else {"sticky_actions": run.sticky_actions}),
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


def field_defaults(run) -> dict[str, dict[str, Any]]:
    """The defaults of the run's agent and program config classes, by `run.json` section; {}
    for a class that cannot be made without arguments (an external agent's may not)."""
    from agentkit.config import as_dict

    out = {}
    for section, config in (("config", run.agent_config), ("program", run.program_config)):
        try:
            out[section] = to_json(as_dict(type(config)()))
        except Exception:  # noqa: BLE001  (any error of a class's own checks: no defaults)
            out[section] = {}
    return out


class RunDir:
    """One run's logdir: checked by `inspect`, then opened for this life, closed at its end.

    From `inspect` to `close` the run holds an exclusive lock on the directory
    (flock on the directory itself, so no file is made before the checks
    pass); a second run in the same logdir is refused, and a run killed with
    -9 leaves no stale lock (the kernel drops it with the process).
    """

    def __init__(self, logdir: str, fresh: bool, current: dict[str, Any],
                 defaults: dict[str, dict[str, Any]] | None = None):
        self.logdir = logdir
        self.fresh = fresh
        self.current = current
        # Per record section ("config", "program"): the fields' defaults, which a run recorded
        # before a field existed played with.
        self.defaults = defaults or {}
        self.lives: list[dict[str, Any]] = []
        self.changed: dict[str, tuple[Any, Any]] = {}
        self.initial_counts: dict[str, float] | None = None
        self.prior_wall_s = 0.0  # Wall time of the run's earlier lives.
        self.unchecked = False  # Resuming a run that has no run.json (nothing to compare).
        self.kept: list[str] = []  # Files --fresh left because no run wrote them.
        self.learner_checkpoint_steps: int | None = None  # The learner.npz a resume restores.
        self._lock_fd: int | None = None

    @classmethod
    def inspect(cls, run) -> RunDir:
        """Checks that `run` may use its logdir; reads what a resume continues from."""
        self = cls(run.logdir, run.fresh, settings(run), field_defaults(run))
        try:
            self._inspect()
        except BaseException:
            self.close()
            raise
        return self

    def _inspect(self) -> None:
        path = self.logdir
        if os.path.lexists(path) and not os.path.isdir(path):
            raise RunDirError(f"--logdir: {path} is a file, not a directory")
        if not os.path.isdir(path):
            return
        self._lock()
        _check_safe(path)
        own, foreign, _ = run_files.walk(path)
        marked = MARKER in own
        if not marked and foreign:
            listed = f"{', '.join(foreign[:3])}{' ...' if len(foreign) > 3 else ''}"
            if self.fresh:
                raise RunDirError(
                    f"--fresh: {path} is not a run directory of this toolkit (no {MARKER} marker, "
                    f"and it holds {listed}), so nothing in it is deleted; give a new --logdir")
            raise RunDirError(
                f"--logdir: {path} is not empty and not a run directory of this toolkit (no "
                f"{MARKER} marker; it holds {listed}); give an empty or new --logdir")
        if self.fresh:
            return
        record = read_record(os.path.join(path, RECORD))
        if record is not None and "sticky_actions" in self.current:
            from components.environments.atari import STICKY_ACTION_PROBABILITY

            # What atari: played before the flag.
            record.setdefault("sticky_actions", STICKY_ACTION_PROBABILITY)
        if record is not None:
            for section, defaults in self.defaults.items():
                if isinstance(record.get(section), dict):  # A field added since it was recorded.
                    for name, value in defaults.items():
                        record[section].setdefault(name, value)
            self.changed = differences(record, self.current)
            fixed = {k: v for k, v in self.changed.items() if k not in RESUMABLE}
            if fixed:
                raise RunDirError(
                    f"--logdir: {path} holds a run with other settings ({describe_changes(fixed)}); "
                    f"rerun with --fresh to replace it, or use another --logdir")
            self.lives = list(record.get("lives", []))
        saved = read_saved_counts(path)  # A damaged file fails here, naming it.
        if saved is None and _recorded_steps(self.lives):
            raise RunDirError(
                f"--logdir: {checkpoint_path(path)} is missing, but {RECORD} records "
                f"{len(self.lives)} earlier {'life' if len(self.lives) == 1 else 'lives'} up to "
                f"actor_steps={_recorded_steps(self.lives)}: "
                f"a resume would restart the counts and wall time at 0; put the file back, or "
                f"rerun with --fresh to start over")
        if saved is not None:
            self.unchecked = record is None
            self.initial_counts, counter_wall = saved
            self.prior_wall_s = max(counter_wall, _recorded_wall(self.lives))
        learner = os.path.join(path, "checkpoints", "learner.npz")
        if os.path.exists(learner):
            from agentkit.checkpointing import read_checkpoint

            steps = read_checkpoint(learner).get("num_steps")
            if steps is not None and steps.shape == () and steps.dtype.kind in "iu":
                self.learner_checkpoint_steps = int(steps)
        from components.replay.checkpoints import check_replay_checkpoint

        check_replay_checkpoint(os.path.join(path, "checkpoints", "replay"))

    def _lock(self) -> None:
        """Takes the directory's lock, or refuses: another run is using it now."""
        if self._lock_fd is not None:
            return
        fd = os.open(self.logdir, os.O_RDONLY | os.O_DIRECTORY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise RunDirError(f"--logdir: {self.logdir} is in use by another run that is still "
                              f"going; wait for it to end, or give another --logdir") from None
        self._lock_fd = fd

    def close(self) -> None:
        """Releases the directory's lock (at the end of the life, or of a refused start)."""
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    def budget_spent(self, max_actor_steps: int) -> bool:
        """Whether a resumed run already took its whole step budget (nothing left to run)."""
        return bool(self.initial_counts) and self.initial_counts.get("actor_steps", 0) >= max_actor_steps

    def open(self) -> None:
        """Creates the logdir, clears the run's own files (`--fresh`), records this life."""
        try:
            os.makedirs(self.logdir, exist_ok=True)
            self._lock()  # A logdir that did not exist at inspect() is locked now.
            _check_safe(self.logdir)  # Made since inspect(): checked again, under the lock.
            if self.fresh:
                self.kept = run_files.clear(self.logdir)
            with open_for_writing(os.path.join(self.logdir, MARKER)) as f:
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
        lost = self.learner_steps_lost
        if lost is not None:
            self.lives[-1].update(learner_restored_at=self.learner_checkpoint_steps,
                                  learner_steps_lost=lost)
        self._write()

    @property
    def learner_steps_lost(self) -> int | None:
        """Updates a resume redoes: those the counts hold beyond the learner checkpoint (the
        learner saves every --checkpoint_every_s, the counter every 2 s; a kill -9 between
        loses them). `learner_steps` counts updates done, so they are counted again, once
        redone; None when nothing is resumed."""
        if self.initial_counts is None or self.learner_checkpoint_steps is None:
            return None
        return max(0, int(self.initial_counts.get("learner_steps", 0))
                   - self.learner_checkpoint_steps)

    def end_life(self, status: str, counts: dict[str, float], life_wall_s: float,
                 node_restarts: dict[str, int] | None = None,
                 startup_s: float | None = None) -> None:
        """Records how this life ended (not reached when the process is killed); `startup_s`:
        from the life's start until the nodes that act and learn were built (Ray's start and
        the builds), the part of its wall time that is not the program's."""
        life = self.lives[-1]
        if node_restarts is not None:
            life["node_restarts"] = dict(node_restarts)
        if startup_s is not None:
            life["startup_s"] = round(startup_s, 2)
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


def _check_safe(path: str) -> None:
    """Refuses a logdir where another user could make the run write through a link: one not
    owned by this user or writable by others, or a run file or folder that is a symlink."""
    info = os.stat(path)
    if info.st_uid != os.geteuid():
        raise RunDirError(f"--logdir: {path} belongs to another user (uid {info.st_uid}), who "
                          f"could plant links in it; give a directory of your own")
    if info.st_mode & 0o002:
        raise RunDirError(f"--logdir: {path} is writable by every user, who could plant links "
                          f"in it; run `chmod o-w {path}` or give another --logdir")
    links = run_files.symlinks(path)
    if links:
        target = os.readlink(os.path.join(path, links[0]))
        raise RunDirError(f"--logdir: {os.path.join(path, links[0])} is a symbolic link (to "
                          f"{target}); a run never writes through a link it did not make: "
                          f"remove it, or give another --logdir")


def read_record(path: str) -> dict[str, Any] | None:
    """run.json as a dict of the expected shape, None if absent; RunDirError if damaged."""
    if not os.path.exists(path):
        return None
    try:
        with open(path) as f:
            record = json.load(f)
        problem = _record_problem(record)
    except (OSError, ValueError) as e:
        problem = str(e)
    if problem:
        raise RunDirError(f"--logdir: {path} is damaged ({problem}); rerun with --fresh or "
                          f"another --logdir")
    return record


_JSON_TYPES = {list: "list", str: "string", int: "number", float: "number", bool: "boolean",
               type(None): "null"}


def _record_problem(record: Any) -> str | None:
    """What is wrong with the shape of a run.json, or None."""
    if not isinstance(record, dict):
        return f"a JSON {_JSON_TYPES.get(type(record), type(record).__name__)}, not an object"
    for key in ("config", "program", "ray"):
        if key in record and not isinstance(record[key], dict):
            return f"{key!r} is not an object"
    lives = record.get("lives", [])
    if not isinstance(lives, list) or not all(isinstance(life, dict) for life in lives):
        return "'lives' is not a list of objects"
    for life in lives:
        if not isinstance(life.get("node_restarts", {}), dict):
            return "a life's 'node_restarts' is not an object"
        for key in ("wall_time_s_before", "wall_time_s", "actor_steps", "actor_steps_before"):
            if key in life and (isinstance(life[key], bool)
                                or not isinstance(life[key], (int, float))):
                return f"a life's {key!r} is not a number"
    return None


def _recorded_steps(lives: list[dict[str, Any]]) -> int:
    """The most actor steps any recorded life reached (0: nothing counted yet)."""
    return max((int(life.get(key, 0)) for life in lives
                for key in ("actor_steps", "actor_steps_before")), default=0)
