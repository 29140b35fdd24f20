"""`summary.json`: the one-file result of a run, written at every exit."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import os
from typing import Any

from agentkit.files import open_for_writing
from agentkit.loggers import read_csv


@dataclasses.dataclass(frozen=True)
class EvaluationRound:
    """One evaluation round: the evaluator's episodes that share `actor_steps`."""

    actor_steps: int
    wall_time_s: float  # When its first episode ended.
    returns: tuple[float, ...]

    @property
    def mean(self) -> float:
        return sum(self.returns) / len(self.returns)


def evaluation_rounds(rows: list[dict[str, str]]) -> list[EvaluationRound]:
    """Evaluator rows (with numeric episode_return, actor_steps and wall_time_s) grouped into
    rounds, in order of actor steps."""
    groups: dict[int, list[dict[str, str]]] = {}
    for row in rows:
        groups.setdefault(int(float(row["actor_steps"])), []).append(row)
    return [EvaluationRound(steps, min(float(r["wall_time_s"]) for r in group),
                            tuple(float(r["episode_return"]) for r in group))
            for steps, group in sorted(groups.items())]


def read_evaluation_rows(logdir: str, damaged: list[int] | None = None) -> list[dict[str, str]]:
    """The rows of `logdir`'s evaluator.csv whose return, steps and time read as numbers;
    each other row counts in `damaged`."""
    damaged = [] if damaged is None else damaged
    path = os.path.join(logdir, "evaluator.csv")
    rows = read_csv(path, damaged) if os.path.exists(path) else []
    return [r for r in rows if _numbers(r, damaged)]


# What every `wall_time_s` (CSV rows, summary.json) counts from, as summary.json says.
WALL_TIME_ORIGIN = ("the start of the run's first life, after the command's checks; Ray's start "
                    "(--launch=ray) and the node builds are inside it: "
                    "first_reached.wall_time_s_after_startup leaves them out")


def time_after_startup(wall_time_s: float, lives: list[dict[str, Any]]) -> float | None:
    """`wall_time_s` of the run less the start-ups (Ray, node builds) of the lives that began
    before it: time-to-target counted from the same point under threads and Ray. None when a
    life before it recorded no start-up (it was killed)."""
    spent = 0.0
    for life in lives:
        before = float(life.get("wall_time_s_before", 0.0))
        if before > wall_time_s:
            break
        if "startup_s" not in life:
            return None
        spent += min(float(life["startup_s"]), wall_time_s - before)
    return round(wall_time_s - spent, 2)


def evaluation_stats(logdir: str, threshold: float | None = None,
                     lives: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Mean of the last 10 evaluation episodes, their count, and when a threshold was first met.

    The threshold counts as met at the first evaluation round (rows sharing
    `actor_steps`) whose mean return reaches it; with the run's `lives` (run.json's), also
    at what time after the start-ups (`time_after_startup`).
    """
    damaged: list[int] = []
    rows = read_evaluation_rows(logdir, damaged)
    returns = [float(r["episode_return"]) for r in rows]
    stats: dict[str, Any] = {
        "eval_return_mean_last10": (sum(returns[-10:]) / len(returns[-10:])) if returns else None,
        "eval_episodes": len(returns),
    }
    if damaged:  # Skipped, not fatal: the rest of the run's curve still counts.
        stats["damaged_csv_rows"] = {"evaluator.csv": len(damaged)}
    if threshold is not None:
        for round_ in evaluation_rounds(rows):
            if round_.mean >= threshold:
                stats["first_reached"] = {
                    "threshold": threshold,
                    "wall_time_s": round_.wall_time_s,
                    "actor_steps": round_.actor_steps,
                    "eval_return_mean": round_.mean,
                }
                after = None if lives is None else time_after_startup(round_.wall_time_s, lives)
                if after is not None:
                    stats["first_reached"]["wall_time_s_after_startup"] = after
                break
    return stats


def _numbers(row: dict[str, str], damaged: list[int]) -> bool:
    """Whether the row's return, steps and time read as numbers (else it counts as damaged)."""
    try:
        for key in ("episode_return", "actor_steps", "wall_time_s"):
            float(row[key])
        return True
    except (KeyError, TypeError, ValueError):
        damaged.append(-1)
        return False


def write_summary(
    logdir: str,
    agent: str,
    env: str,
    launch: str,
    status: str,
    counts: dict[str, float],
    wall_time_s: float,
    config: dict[str, Any],
    program: dict[str, Any],
    threshold: float | None = None,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Writes `<logdir>/summary.json` atomically and returns its content.

    `wall_time_s` is the run's, over every life (the rates divide the whole
    run's counts by it); `extra` adds launcher facts (for example the node
    restarts under ray, the lives: with them `first_reached` also says when, start-ups
    left out).
    """
    actor_steps = int(counts.get("actor_steps", 0))
    learner_steps = int(counts.get("learner_steps", 0))
    wall = max(wall_time_s, 1e-9)
    summary: dict[str, Any] = {
        "agent": agent,
        "env": env,
        "launch": launch,
        "status": status,
        "actor_steps": actor_steps,
        "learner_steps": learner_steps,
        "wall_time_s": round(wall_time_s, 2),
        "wall_time_origin": WALL_TIME_ORIGIN,
        "actor_steps_per_s": round(actor_steps / wall, 1),
        "learner_steps_per_s": round(learner_steps / wall, 1),
    }
    summary.update(evaluation_stats(logdir, threshold, (extra or {}).get("lives")))
    summary.update(extra or {})
    summary["config"] = config
    summary["program"] = program
    write_json(os.path.join(logdir, "summary.json"), summary)
    return summary


def write_json(path: str, data: Any) -> None:
    """Writes `data` to `path` atomically; a failed write (a full disk) leaves no temporary file."""
    tmp = path + ".tmp"
    try:
        with open_for_writing(tmp) as f:
            json.dump(data, f, indent=1, default=_json_default)
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise


def to_json(data: Any) -> Any:
    """`data` as JSON values (tuples become lists, numpy scalars numbers), as it reads back."""
    return json.loads(json.dumps(data, default=_json_default))


def _json_default(value: Any) -> Any:
    if hasattr(value, "item"):
        return value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    return str(value)
