"""`summary.json`: the one-file result of a run, written at every exit."""

from __future__ import annotations

import json
import math
import os
from typing import Any

from agentkit.loggers import read_csv


def evaluation_stats(logdir: str, threshold: float | None = None) -> dict[str, Any]:
    """Mean of the last 10 evaluation episodes, their count, and when a threshold was first met.

    The threshold counts as met at the first evaluation round (rows sharing
    `actor_steps`) whose mean return reaches it.
    """
    path = os.path.join(logdir, "evaluator.csv")
    rows = read_csv(path) if os.path.exists(path) else []
    returns = [float(r["episode_return"]) for r in rows]
    stats: dict[str, Any] = {
        "eval_return_mean_last10": (sum(returns[-10:]) / len(returns[-10:])) if returns else None,
        "eval_episodes": len(returns),
    }
    if threshold is not None:
        rounds: dict[float, list[dict]] = {}
        for row in rows:
            rounds.setdefault(float(row["actor_steps"]), []).append(row)
        for steps, group in sorted(rounds.items()):
            mean = sum(float(r["episode_return"]) for r in group) / len(group)
            if mean >= threshold:
                stats["first_reached"] = {
                    "threshold": threshold,
                    "wall_time_s": min(float(r["wall_time_s"]) for r in group),
                    "actor_steps": int(steps),
                    "eval_return_mean": mean,
                }
                break
    return stats


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

    `extra` adds launcher facts (for example the node restarts under ray).
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
        "actor_steps_per_s": round(actor_steps / wall, 1),
        "learner_steps_per_s": round(learner_steps / wall, 1),
    }
    summary.update(evaluation_stats(logdir, threshold))
    summary.update(extra or {})
    summary["config"] = config
    summary["program"] = program
    os.makedirs(logdir, exist_ok=True)
    path = os.path.join(logdir, "summary.json")
    with open(path + ".tmp", "w") as f:
        json.dump(summary, f, indent=1, default=_json_default)
    os.replace(path + ".tmp", path)
    return summary


def _json_default(value: Any) -> Any:
    if hasattr(value, "item"):
        return value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    return str(value)
