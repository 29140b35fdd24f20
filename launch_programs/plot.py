"""Learning curves from run directories: `python -m launch_programs.plot RUN_DIR [RUN_DIR ...]`.

One figure, two panels, one line per agent and environment:

- evaluation return against actor steps (or wall time): each round's mean over
  its episodes, shaded over their spread (one standard deviation); runs of the
  same agent and environment given together make one line, the mean over runs
  of each round's mean, shaded from the lowest to the highest run;
- training episode return, the actors' episodes averaged in bins of the x axis.

It reads what every run writes (`run.json`, `evaluator.csv`, `actor.csv`), so it
works on a run still going and on one stopped and resumed (its curve goes on).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from collections.abc import Sequence

import numpy as np

from agentkit.loggers import read_csv
from launch_programs.summary import evaluation_rounds, read_evaluation_rows

X_AXES = {"actor_steps": "actor steps", "wall_time_s": "wall time (s)"}


class RunDirError(ValueError):
    """A directory given is not a run's, or has nothing to plot yet."""


@dataclasses.dataclass
class Curves:
    """One run's evaluation rounds and training episodes, as arrays."""

    label: str  # "dqn on minatar:breakout"
    eval_steps: np.ndarray  # [R] actor steps of each evaluation round
    eval_wall: np.ndarray  # [R] wall time of each round's first episode
    eval_mean: np.ndarray  # [R] the round's mean return
    eval_std: np.ndarray  # [R] and its standard deviation over the round's episodes
    train_steps: np.ndarray  # [E] actor steps at each training episode's end
    train_wall: np.ndarray  # [E]
    train_return: np.ndarray  # [E]


def _rows(path: str) -> list[dict[str, str]]:
    rows = read_csv(path) if os.path.exists(path) else []
    return [r for r in rows if r.get("episode_return") not in (None, "")]


def load_run(run_dir: str) -> Curves:
    """The curves of the run in `run_dir`; RunDirError naming it when there are none."""
    if not os.path.isdir(run_dir):
        raise RunDirError(f"{run_dir}: no such run directory")
    info_path = os.path.join(run_dir, "run.json")
    if not os.path.exists(info_path):
        raise RunDirError(f"{run_dir}: not a run directory (no run.json)")
    with open(info_path) as f:
        info = json.load(f)
    rounds = evaluation_rounds(read_evaluation_rows(run_dir))
    training = _rows(os.path.join(run_dir, "actor.csv"))
    if not rounds and not training:
        raise RunDirError(f"{run_dir}: no evaluation or training episodes yet")
    returns = [np.array(r.returns) for r in rounds]
    training.sort(key=lambda r: float(r["actor_steps"]))
    return Curves(
        label=f"{info.get('agent', '?')} on {info.get('env', '?')}",
        eval_steps=np.array([r.actor_steps for r in rounds], np.float64),
        eval_wall=np.array([r.wall_time_s for r in rounds], np.float64),
        eval_mean=np.array([r.mean() for r in returns], np.float64),
        eval_std=np.array([r.std() for r in returns], np.float64),
        train_steps=np.array([float(r["actor_steps"]) for r in training]),
        train_wall=np.array([float(r["wall_time_s"]) for r in training]),
        train_return=np.array([float(r["episode_return"]) for r in training]),
    )


@dataclasses.dataclass
class Line:
    """What one line of a panel draws: x, the centre and the band around it."""

    label: str
    x: np.ndarray
    centre: np.ndarray
    low: np.ndarray
    high: np.ndarray


def evaluation_line(runs: Sequence[Curves], x: str = "actor_steps") -> Line:
    """One run: round means +- their standard deviation. Several: round by round (as far
    as the shortest run), the mean over runs, from the lowest to the highest run."""
    runs = [r for r in runs if len(r.eval_mean)]
    if not runs:
        raise RunDirError("no evaluation rounds yet")
    n = min(len(r.eval_mean) for r in runs)
    xs = np.mean([(r.eval_steps if x == "actor_steps" else r.eval_wall)[:n] for r in runs], 0)
    label = runs[0].label
    if len(runs) == 1:
        run = runs[0]
        return Line(label, xs, run.eval_mean, run.eval_mean - run.eval_std,
                    run.eval_mean + run.eval_std)
    means = np.stack([r.eval_mean[:n] for r in runs])
    return Line(f"{label} ({len(runs)} runs)", xs, means.mean(0), means.min(0), means.max(0))


def training_line(runs: Sequence[Curves], x: str = "actor_steps", bins: int = 50) -> Line:
    """Training episode returns of the runs together, averaged in `bins` bins of x, with the
    bins' standard deviation; empty bins are left out."""
    xs = np.concatenate([r.train_steps if x == "actor_steps" else r.train_wall for r in runs])
    ys = np.concatenate([r.train_return for r in runs])
    label = runs[0].label + (f" ({len(runs)} runs)" if len(runs) > 1 else "")
    if not len(xs):
        return Line(label, xs, ys, ys, ys)
    edges = np.linspace(xs.min(), xs.max(), bins + 1)
    which = np.clip(np.searchsorted(edges, xs, side="right") - 1, 0, bins - 1)
    keep = [b for b in range(bins) if np.any(which == b)]
    centre = np.array([ys[which == b].mean() for b in keep])
    spread = np.array([ys[which == b].std() for b in keep])
    x_mid = np.array([xs[which == b].mean() for b in keep])
    return Line(label, x_mid, centre, centre - spread, centre + spread)


def group_runs(runs: Sequence[Curves]) -> list[list[Curves]]:
    """Runs of the same agent and environment together, in the order first given."""
    groups: dict[str, list[Curves]] = {}
    for run in runs:
        groups.setdefault(run.label, []).append(run)
    return list(groups.values())


def plot(run_dirs: Sequence[str], out: str, x: str = "actor_steps") -> list[Line]:
    """Writes the figure of `run_dirs` to `out` (PNG); returns the evaluation lines drawn."""
    import matplotlib

    matplotlib.use("Agg")  # Files only: no display needed.
    import matplotlib.pyplot as plt

    groups = group_runs([load_run(d) for d in run_dirs])
    figure, (top, bottom) = plt.subplots(2, 1, figsize=(7, 6), sharex=True, dpi=80)
    drawn = []
    for group in groups:
        for axis, line in ((top, evaluation_line(group, x) if any(len(r.eval_mean) for r in group)
                            else None), (bottom, training_line(group, x))):
            if line is None or not len(line.x):
                continue
            (handle,) = axis.plot(line.x, line.centre, label=line.label)
            axis.fill_between(line.x, line.low, line.high, color=handle.get_color(), alpha=0.2)
            if axis is top:
                drawn.append(line)
    top.set_ylabel("evaluation return")
    bottom.set_ylabel("training episode return")
    bottom.set_xlabel(X_AXES[x])
    for axis in (top, bottom):
        axis.grid(alpha=0.3)
        if axis.lines:
            axis.legend(fontsize=8, loc="best")
    figure.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    figure.savefig(out)
    plt.close(figure)
    return drawn


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m launch_programs.plot",
        description="Learning curves (evaluation and training return) of run directories.")
    parser.add_argument("run_dirs", nargs="+", metavar="RUN_DIR")
    parser.add_argument("--x", default="actor_steps", choices=sorted(X_AXES),
                        help="the x axis: actor steps or wall-clock seconds")
    parser.add_argument("--out", default=None,
                        help="the PNG to write (default: curves.png in the first RUN_DIR)")
    args = parser.parse_args(argv)
    out = args.out or os.path.join(args.run_dirs[0], "curves.png")
    try:
        lines = plot(args.run_dirs, out, args.x)
    except RunDirError as e:
        print(f"plot: {e}", file=sys.stderr)
        return 2
    for line in lines:
        print(f"[plot] {line.label}: {len(line.x)} evaluation rounds, last mean "
              f"{line.centre[-1]:.2f}")
    print(f"[plot] wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
