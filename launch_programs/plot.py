"""Learning curves from run directories: `python -m launch_programs.plot RUN_DIR [RUN_DIR ...]`.

One figure, two panels, one line per agent and environment:

- evaluation return against actor steps (or wall time): each round's mean over
  its episodes, shaded over their spread (one standard deviation); runs of the
  same agent and environment given together make one line, the mean over runs
  of each round's mean, shaded from the lowest to the highest run;
- training episode return, the actors' episodes averaged in bins of the x axis.

`--reference=FILE` (repeatable) draws a published curve beside them, dashed,
over the runs' steps only (compared at equal agent steps), on the panel of its kind of
episodes (`launch_programs/references.py`; the
data with their sources are in bench/references/).

It reads what every run writes (`run.json`, `evaluator.csv`, `actor.csv`), so it
works on a run still going and on one stopped and resumed (its curve goes on).
A damaged row (cut short by a killed process, or not numbers) is skipped and
counted on one line; a run directory, file or `--out` it cannot use stops it
with one line, `error: ...`, and exit code 2.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import dataclasses
import json
import math
import os
import sys
import textwrap
from collections.abc import Sequence

import numpy as np

from agentkit.loggers import read_csv
from agentkit.presets import environment_family
from launch_programs.references import Reference, ReferenceError, load_reference
from launch_programs.summary import evaluation_rounds

X_AXES = {"actor_steps": "actor steps", "wall_time_s": "wall time (s)"}
FORMATS = ("png", "pdf", "svg")  # What --out may end in (its extension picks the format).
DEFAULT_NAME = "curves.png"  # Written in the first RUN_DIR, or in --out when that is a directory.
COLUMNS = ("wall_time_s", "actor_steps", "episode_return")  # Numbers in every row used.


class RunDirError(ValueError):
    """A directory given is not a run's, or has nothing to plot yet (or a file of it is
    damaged past use); the message names it."""


class OutError(ValueError):
    """The figure cannot be written where asked; the message names the path."""


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
    # Whether the training episodes' returns are of clipped rewards (Atari's, in [-1, 1]
    # a step): then they are on another scale than the evaluation's game scores.
    train_clipped: bool = False


def training_rewards_clipped(env: str) -> bool:
    """Whether `env`'s training episodes sum clipped rewards (atari: clips in training)."""
    return environment_family(env) == "atari"


def _rows(n: int) -> str:
    return f"{n} row" if n == 1 else f"{n} rows"


def _numbers(row: dict[str, str]) -> bool:
    try:
        return all(math.isfinite(float(row[c])) for c in COLUMNS)
    except (KeyError, TypeError, ValueError):
        return False


def read_rows(path: str, damaged: dict[str, int], blank_return_ok: bool = False
              ) -> list[dict[str, str]]:
    """The rows of the run's CSV at `path` whose wall time, actor steps and return read as
    finite numbers ([] when there is no such file). A row that does not is skipped and
    counted in `damaged[path]`; with `blank_return_ok`, a row with an empty return (an
    actor's row between episodes) is left out without counting. RunDirError when the file
    is not a CSV a run writes (not text, not those columns) or none of its rows is usable."""
    if not os.path.exists(path):
        return []
    bad: list[int] = []
    try:
        rows = read_csv(path, bad)
    except UnicodeDecodeError as e:
        raise RunDirError(f"{path}: damaged (not UTF-8 text at byte {e.start}); not a CSV a "
                          f"run writes") from None
    except csv.Error as e:
        raise RunDirError(f"{path}: damaged ({e}); not a CSV a run writes") from None
    except OSError as e:
        raise RunDirError(f"{path}: cannot read it ({e.strerror or e})") from None
    missing = [c for c in COLUMNS if rows and c not in rows[0]]
    if missing:
        raise RunDirError(f"{path}: not a CSV a run writes (no column {', '.join(missing)})")
    if blank_return_ok:
        rows = [r for r in rows if r["episode_return"] != ""]
    usable = [r for r in rows if _numbers(r)]
    skipped = len(bad) + len(rows) - len(usable)
    if skipped and not usable:
        raise RunDirError(f"{path}: damaged ({_rows(skipped)}, none with numbers for "
                          f"{', '.join(COLUMNS)})")
    if skipped:
        damaged[path] = skipped
    return usable


def read_info(run_dir: str) -> dict:
    """run.json, an object that names the agent and environment; RunDirError if it is not."""
    path = os.path.join(run_dir, "run.json")
    if not os.path.exists(path):
        raise RunDirError(f"{run_dir}: not a run directory (no run.json)")
    try:
        with open(path, "rb") as f:
            info = json.loads(f.read().decode())
    except OSError as e:
        raise RunDirError(f"{path}: cannot read it ({e.strerror or e})") from None
    except (ValueError, RecursionError) as e:  # Not UTF-8, not JSON, or nested past reading.
        raise RunDirError(f"{path}: damaged (not JSON: {str(e).splitlines()[0]})") from None
    if not isinstance(info, dict):
        kind = "null" if info is None else type(info).__name__
        raise RunDirError(f"{path}: damaged (a JSON {kind}, not an object)")
    for key in ("agent", "env"):
        if not isinstance(info.get(key), str):
            raise RunDirError(f"{path}: damaged (no {key!r} string: a run records its agent "
                              f"and environment)")
    return info


def run_label(agent: str, env: str, sticky_actions=None) -> str:
    """"ppo on atari:Pong (sticky 0)": the protocol named where the run recorded it."""
    label = f"{agent} on {env}"
    if isinstance(sticky_actions, (int, float)) and not isinstance(sticky_actions, bool):
        label += f" (sticky {sticky_actions:g})"
    return label


def load_run(run_dir: str, damaged: dict[str, int] | None = None) -> Curves:
    """The curves of the run in `run_dir`; RunDirError naming it (or its file) when there are
    none. Rows skipped as damaged are counted in `damaged`, by file."""
    damaged = {} if damaged is None else damaged
    if not os.path.isdir(run_dir):
        what = "not a directory" if os.path.exists(run_dir) else "no such run directory"
        raise RunDirError(f"{run_dir}: {what}")
    info = read_info(run_dir)
    rounds = evaluation_rounds(read_rows(os.path.join(run_dir, "evaluator.csv"), damaged))
    training = read_rows(os.path.join(run_dir, "actor.csv"), damaged, blank_return_ok=True)
    if not rounds and not training:
        raise RunDirError(f"{run_dir}: no evaluation or training episodes yet")
    returns = [np.array(r.returns) for r in rounds]
    training.sort(key=lambda r: float(r["actor_steps"]))
    return Curves(
        label=run_label(info['agent'], info['env'], info.get("sticky_actions")),
        eval_steps=np.array([r.actor_steps for r in rounds], np.float64),
        eval_wall=np.array([r.wall_time_s for r in rounds], np.float64),
        eval_mean=np.array([r.mean() for r in returns], np.float64),
        eval_std=np.array([r.std() for r in returns], np.float64),
        train_steps=np.array([float(r["actor_steps"]) for r in training]),
        train_wall=np.array([float(r["wall_time_s"]) for r in training]),
        train_return=np.array([float(r["episode_return"]) for r in training]),
        train_clipped=training_rewards_clipped(info["env"]),
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


def output_path(out: str | None, run_dirs: Sequence[str]) -> str:
    """The file the figure goes to: `out`; curves.png in `out` when that is a directory;
    `out`.png when it has no extension; curves.png in the first run directory when None.
    OutError when its extension is not one of FORMATS."""
    if out is None:
        return os.path.join(run_dirs[0], DEFAULT_NAME)
    if os.path.isdir(out):
        return os.path.join(out, DEFAULT_NAME)
    extension = os.path.splitext(out)[1]
    if not extension:
        return out + ".png"
    if extension[1:].lower() not in FORMATS:
        raise OutError(f"unknown extension {extension}; allowed: "
                       f"{', '.join('.' + f for f in FORMATS)} (none: .png is added)")
    return out


def plot(run_dirs: Sequence[str], out: str, x: str = "actor_steps",
         damaged: dict[str, int] | None = None,
         references: Sequence[Reference] = ()) -> list[Line]:
    """Writes the figure of `run_dirs` to the file `out`, whose extension (one of FORMATS)
    picks the format; returns the evaluation lines drawn. OutError when `out` cannot be
    written (a figure already there is then left as it was)."""
    _format(out)
    return draw([load_run(d, damaged) for d in run_dirs], out, x, references)


def _format(out: str) -> str:
    """The figure format `out`'s extension names; OutError when it is not one of FORMATS."""
    format_ = os.path.splitext(out)[1][1:].lower()
    if format_ not in FORMATS:
        raise OutError(f"{out}: unknown extension; allowed: "
                       f"{', '.join('.' + f for f in FORMATS)}")
    return format_


def draw(runs: Sequence[Curves], out: str, x: str = "actor_steps",
         references: Sequence[Reference] = ()) -> list[Line]:
    """plot() of curves already loaded (from run directories, or a result file's rounds)."""
    format_ = _format(out)
    groups = group_runs(runs)
    import matplotlib

    matplotlib.use("Agg")  # Files only: no display needed.
    import matplotlib.pyplot as plt

    figure, (top, bottom) = plt.subplots(2, 1, figsize=(7, 6), sharex=True, dpi=80)
    drawn = []
    x_end = 0.0  # The runs' last x: published curves are seen over the same steps.
    for group in groups:
        for axis, line in ((top, evaluation_line(group, x) if any(len(r.eval_mean) for r in group)
                            else None), (bottom, training_line(group, x))):
            if line is None or not len(line.x):
                continue
            x_end = max(x_end, float(np.max(line.x)))
            (handle,) = axis.plot(line.x, line.centre, label=line.label)
            axis.fill_between(line.x, line.low, line.high, color=handle.get_color(), alpha=0.2)
            if axis is top:
                drawn.append(line)
    for reference in references:  # Published curves, dashed, on the panel of their episodes.
        axis = top if reference.panel == "evaluation" else bottom
        steps, returns = np.array(reference.steps), np.array(reference.returns)
        if x_end > 0:  # At equal agent steps: up to where the runs end.
            keep = steps <= 1.05 * x_end
            if not keep.any():  # A final score at a larger budget: a level, dotted, named so.
                axis.axhline(returns[0], linestyle=":", linewidth=1.4, color="black",
                             label=f"{reference.label} (at {steps[0]:,.0f} {X_AXES[x]}, "
                                   f"past this axis)")
                continue
            steps, returns = steps[keep], returns[keep]
        # A published final score is one point: a marker, where a line would not show.
        axis.plot(steps, returns, linestyle="--", linewidth=1.2, label=reference.label,
                  marker="o" if len(steps) < 3 else None)
    clipped = any(r.train_clipped for r in runs)
    if references and not clipped:  # One return scale for both panels, to read one by the other.
        lows, highs = zip(top.get_ylim(), bottom.get_ylim())
        for axis in (top, bottom):
            axis.set_ylim(min(lows), max(highs))
    top.set_ylabel("evaluation return")
    bottom.set_ylabel("training episode return" + ("\n(rewards clipped to [-1, 1])"
                                                   if clipped else ""))
    bottom.set_xlabel(X_AXES[x])
    for axis in (top, bottom):
        axis.grid(alpha=0.3)
        if axis.lines:  # Long labels (a reference's source) wrapped to stay in the figure.
            handles, labels = axis.get_legend_handles_labels()
            axis.legend(handles, [textwrap.fill(label, 70) for label in labels], fontsize=7,
                        loc="best")
    figure.tight_layout()
    folder, name = os.path.split(os.path.abspath(out))
    partial = os.path.join(folder, f".{name}.{os.getpid()}.partial")
    try:
        os.makedirs(folder, exist_ok=True)
        figure.savefig(partial, format=format_)
        os.replace(partial, out)  # Whole or not at all.
    except OSError as e:
        with contextlib.suppress(OSError):
            os.remove(partial)
        raise OutError(f"cannot write {out} ({e.strerror or e})") from None
    finally:
        plt.close(figure)
    return drawn


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # One line, not argparse's usage block.
        print(f"error: {message} (see --help)", file=sys.stderr)
        sys.exit(2)


def make_parser() -> argparse.ArgumentParser:
    """The command line's flags (the docs' tests check commands against it)."""
    parser = _Parser(
        prog="python -m launch_programs.plot",
        description="Learning curves (evaluation and training return) of run directories.")
    parser.add_argument("run_dirs", nargs="+", metavar="RUN_DIR")
    parser.add_argument("--x", default="actor_steps", choices=sorted(X_AXES),
                        help="the x axis: actor steps or wall-clock seconds")
    parser.add_argument("--out", default=None,
                        help=f"the file to write: its extension, one of "
                             f"{', '.join('.' + f for f in FORMATS)}, picks the format (none: "
                             f".png is added; a directory: {DEFAULT_NAME} in it; default: "
                             f"{DEFAULT_NAME} in the first RUN_DIR)")
    parser.add_argument("--reference", action="append", default=[], metavar="FILE",
                        help="a published curve to draw beside the runs, dashed (JSON with its "
                             "source, protocol and points: bench/references/*.json); repeatable")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = make_parser()
    args = parser.parse_args(argv)
    damaged: dict[str, int] = {}
    try:
        if args.reference and args.x != "actor_steps":
            raise ReferenceError("--reference: published curves are by agent steps; "
                                 "leave --x at actor_steps")
        references = [load_reference(path) for path in args.reference]
        out = output_path(args.out, args.run_dirs)
        lines = plot(args.run_dirs, out, args.x, damaged, references)
    except (RunDirError, ReferenceError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except OutError as e:
        if args.out is None:  # The default place: say how to choose another.
            print(f"error: {e}; give --out=FILE elsewhere", file=sys.stderr)
        else:
            print(f"error: --out={args.out}: {e}", file=sys.stderr)
        return 2
    if damaged:
        print(f"warning: skipped {_rows(sum(damaged.values()))} that could not be read ("
              + ", ".join(f"{path}: {n}" for path, n in damaged.items()) + ")", file=sys.stderr)
    for line in lines:
        print(f"[plot] {line.label}: {len(line.x)} evaluation rounds, last mean "
              f"{line.centre[-1]:.2f}")
    for reference in references:
        print(f"[plot] reference {reference.label}: {len(reference.steps)} points "
              f"({reference.source})")
    print(f"[plot] wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
