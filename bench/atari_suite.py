"""An agent's Atari preset across games, each beside its published reference: the Atari-5 table.

Each game is the command line with the agent's Atari preset (threads launcher) to
--steps agent steps, in its own logdir under --logroot, one game after the other.
Stopped (Ctrl-C, SIGTERM, a killed session) and started again with the same
arguments, the suite resumes the game it was on from that game's checkpoint and
skips the games that took their budget (or that the result file records as done
when their run directory is gone: --rerun runs those again). After each game it
writes (keeping the rows of games recorded earlier)

    bench/results/atari_suite/<agent>.json   per game: the final score (the mean of the
                                             last --final_rounds evaluation rounds, 10
                                             unclipped games each), the reference at its
                                             steps and protocol, random and human scores,
                                             human-normalised scores; the Atari-5 estimate
                                             of the 57-game median
    bench/results/atari_suite/<agent>.md     the same as a table
    bench/results/atari_suite/<agent>-<Game>.png   the game's curve beside its reference
    bench/results/atari_suite/<agent>.png    every game's evaluation rounds, a panel each

(`<agent>-sticky<P>` instead of `<agent>` for a protocol other than the reference's, and
the --run_flags after it, as in `ppo-atari_life_lossfalse`: other settings, other files).

    python bench/atari_suite.py --agent=ppo --games=Breakout,BattleZone --steps=2500000
    python bench/atari_suite.py --agent=ppo --games=Breakout --steps=2500000 --report_only

References live in bench/references/ as data with their sources: random and human
scores (atari_scores.json), the Atari-5 regression (atari5.json) and each agent's
published scores (REFERENCES below). The protocol (sticky actions or not) defaults
to the reference's, so that a score is set beside one of the same protocol.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shlex
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "bench"))

import numpy as np  # noqa: E402
from pixels import run_resumable, stop_on_signals  # noqa: E402

from launch_programs import plot  # noqa: E402
from launch_programs.references import Reference, load_reference  # noqa: E402
from launch_programs.summary import evaluation_rounds, read_evaluation_rows  # noqa: E402

REFERENCE_DIR = os.path.join(ROOT, "bench", "references")
ATARI5_GAMES = ("BattleZone", "DoubleDunk", "NameThisGame", "Phoenix", "Qbert")
# agent -> (its published reference, that reference's sticky-action probability). A ".json"
# file holds final scores by game (mean, seed band, at its agent steps); a name with
# "{game}" is a published curve a game (launch_programs.references), read at the suite's
# steps.
REFERENCES = {
    "ppo": ("ppo-atari-10M.json", 0.0),
    "a2c": ("ppo-atari-10M.json", 0.0),
    "impala": ("impala-atari-10M.json", 0.25),
    "appo": ("impala-atari-10M.json", 0.25),
    "dqn": ("dopamine-{game}-dqn.json", 0.25),
    "rainbow": ("dopamine-{game}-dqn.json", 0.25),
    "r2d2": ("dopamine-{game}-dqn.json", 0.25),
}
DEFAULT_STICKY = 0.25  # components.environments.atari's default, for agents without one.


class SuiteError(ValueError):
    """A bad argument or reference file: one line, exit code 2."""


def rom_id(game: str) -> str:
    """ale-py's ROM name of a game as `atari:<Game>` spells it ("NameThisGame" ->
    "name_this_game")."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", game).lower()


def check_games(games: list[str]) -> list[str]:
    """`games` (each as <Game> or atari:<Game>) as <Game> if ale-py has each; else SuiteError
    naming the first unknown one."""
    import ale_py.roms

    known = set(ale_py.roms.get_all_rom_ids())
    games = [g.removeprefix("atari:") for g in games]
    for game in games:
        if not game or rom_id(game) not in known:
            raise SuiteError(f"--games: unknown game {game!r} (ale-py has no ROM "
                             f"{rom_id(game)!r}); games are spelt as in atari:<Game>, e.g. "
                             f"Pong, Breakout or atari:NameThisGame")
    if len(set(games)) != len(games):
        raise SuiteError(f"--games: a game is named twice in {','.join(games)}")
    return games


def load_json(name: str) -> dict:
    path = os.path.join(REFERENCE_DIR, name)
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        raise SuiteError(f"{path}: cannot read it ({e})") from None


def human_normalised(score: float | None, game: str, scores: dict) -> float | None:
    """100 (score - random) / (human - random), in percent as Atari-5 counts it; None where
    the table lacks the game or there is no score."""
    row = scores["games"].get(game)
    if row is None or score is None:
        return None
    return 100.0 * (score - row["random"]) / (row["human"] - row["random"])


def atari5_median(normalised: dict[str, float | None], model: dict) -> float | None:
    """The Atari-5 estimate of the 57-game median human-normalised score, in percent
    (Aitchison et al.; bench/references/atari5.json): 10^(c0 + sum_i c_i log10(1 + max(hns_i,
    0))) - 1 over the five games. None unless all five have a score."""
    if any(normalised.get(g) is None for g in ATARI5_GAMES):
        return None
    total = model["intercept"] + sum(model["coefficients"][g] * math.log10(
        1.0 + max(normalised[g], 0.0)) for g in ATARI5_GAMES)
    return 10.0 ** total - 1.0


def reference_score(reference_file: str, game: str, steps: int) -> dict | None:
    """The reference's score for `game`: a scores file's entry, or a curve's value at `steps`
    (None where the curve does not reach them or the game has none)."""
    if "{game}" not in reference_file:
        return load_json(reference_file)["games"].get(game)
    path = os.path.join(REFERENCE_DIR, reference_file.format(game=game.lower()))
    if not os.path.exists(path):
        return None
    curve = load_reference(path)
    if not curve.steps[0] <= steps <= curve.steps[-1]:
        return None
    return {"label": curve.label, "mean": round(float(np.interp(steps, curve.steps,
                                                                 curve.returns)), 3),
            "std": None, "agent_steps": steps, "source": curve.source,
            "how_read": f"{os.path.basename(path)} interpolated at {steps} agent steps"}


def flags_slug(run_flags: str) -> str:
    """A name part for the extra flags of a suite ("--atari_life_loss --discount=0.995" ->
    "atari_life_loss-discount0.995"); "" for none."""
    parts = [re.sub(r"[^A-Za-z0-9_.]+", "", flag.lstrip("-").replace("=", ""))
             for flag in shlex.split(run_flags)]
    return "-".join(p for p in parts if p)


def _with_flags(name: str, run_flags: str) -> str:
    slug = flags_slug(run_flags)
    return f"{name}-{slug}" if slug else name


def suite_name(agent: str, sticky: float, run_flags: str = "") -> str:
    """The result files' name: the agent, then the protocol where it is not the reference's,
    then the extra flags, so that suites of other settings never share a file."""
    reference = REFERENCES.get(agent)
    default = reference[1] if reference else DEFAULT_STICKY
    return _with_flags(agent if sticky == default else f"{agent}-sticky{sticky:g}", run_flags)


def result_path(out_dir: str, args) -> str:
    """The suite's JSON under `out_dir`."""
    return os.path.join(out_dir, f"{suite_name(args.agent, args.sticky_actions, args.run_flags)}.json")


def logdir_of(logroot: str, agent: str, sticky: float, game: str, seed: int,
              run_flags: str = "") -> str:
    return os.path.join(logroot, _with_flags(f"{agent}-sticky{sticky:g}", run_flags),
                        f"{game}-s{seed}")


def read_summary(logdir: str) -> dict:
    try:
        with open(os.path.join(logdir, "summary.json")) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def finished(logdir: str, steps: int) -> bool:
    """Whether the game's run took its budget (a completed summary at >= steps)."""
    return took_budget(read_summary(logdir), steps)


def took_budget(record: dict, steps: int) -> bool:
    """Whether a run's summary (or its recorded row) says it completed at >= steps."""
    return record.get("status") == "completed" and int(record.get("actor_steps") or 0) >= steps


def run_command(agent: str, game: str, steps: int, sticky: float, seed: int, logdir: str,
                run_flags: list[str]) -> list[str]:
    return [sys.executable, "-m", "launch_programs.run", f"--agent={agent}",
            f"--env=atari:{game}", "--launch=threads", f"--seed={seed}",
            f"--max_actor_steps={steps}", f"--sticky_actions={sticky:g}",
            f"--logdir={logdir}", "--print_every_s=30", *run_flags]


def game_result(logdir: str, game: str, steps: int, final_rounds: int,
                reference: dict | None, scores: dict) -> dict:
    """One game's row: its final score from the last evaluation rounds, and the reference's."""
    row: dict = {"game": game, "budget": steps, "logdir": os.path.relpath(logdir, ROOT)}
    try:
        curves = plot.load_run(logdir)
    except plot.RunDirError as e:
        row["status"] = f"not run ({e})"
        curves = None
    if curves is not None:
        summary = read_summary(logdir)
        row["status"] = summary.get("status", "running or stopped")
        row["actor_steps"] = summary.get("actor_steps")
        row["wall_time_s"] = summary.get("wall_time_s")
        row["actor_steps_per_s"] = summary.get("actor_steps_per_s")
        row["eval_rounds"] = [[int(s), round(float(m), 3), round(float(d), 3)] for s, m, d in
                              zip(curves.eval_steps, curves.eval_mean, curves.eval_std)]
        last = evaluation_rounds(read_evaluation_rows(logdir))[-final_rounds:]
        episodes = [x for r in last for x in r.returns]
        if episodes:  # The mean over the last rounds' episodes (the game's own score).
            row["final_score"] = round(float(np.mean(episodes)), 3)
            row["final_score_std"] = round(float(np.std(episodes)), 3)
            row["final_episodes"] = len(episodes)
            row["final_rounds_steps"] = [r.actor_steps for r in last]
    if reference is not None:
        row["reference"] = reference
        # A reference at other steps (CleanRL's 40M frames) is flagged in the table.
        row["reference_at_same_steps"] = reference.get("agent_steps") == steps
        # A ratio of scores means something only where the reference's is positive
        # (DoubleDunk's are negative: compare the human-normalised columns there).
        if row.get("final_score") is not None and (reference.get("mean") or 0) > 0:
            row["ratio_to_reference"] = round(row["final_score"] / reference["mean"], 3)
    table = scores["games"].get(game)
    if table is not None:
        row["random"], row["human"] = table["random"], table["human"]
        row["hns"] = _rounded(human_normalised(row.get("final_score"), game, scores))
        if reference is not None:
            row["reference_hns"] = _rounded(human_normalised(reference.get("mean"), game,
                                                             scores))
    return row


def rows_atari5_median(rows: list[dict], steps: int, model: dict) -> float | None:
    """The Atari-5 estimate from the suite's rows; a game counts once it took its budget
    (a score on the way there is not the game's)."""
    return atari5_median({r["game"]: r.get("hns") if r.get("status") == "completed"
                          and (r.get("actor_steps") or 0) >= steps else None for r in rows},
                         model)


def _rounded(x: float | None) -> float | None:
    return None if x is None else round(x, 4)


def report(args, games: list[str], out_dir: str) -> dict:
    """Writes the suite's JSON, table and figures; returns the JSON's content."""
    scores, model = load_json("atari_scores.json"), load_json("atari5.json")
    reference_file = REFERENCES.get(args.agent, (None, None))[0]
    name = suite_name(args.agent, args.sticky_actions, args.run_flags)
    # The reference counts only where its protocol is this suite's.
    same_protocol = reference_file is not None and REFERENCES[args.agent][1] == args.sticky_actions
    recorded = recorded_rows(result_path(out_dir, args), args)
    rows = []
    # The games recorded earlier stay in the table (a run of one game keeps the others' rows).
    for game in list(recorded) + [g for g in games if g not in recorded]:
        logdir = logdir_of(args.logroot, args.agent, args.sticky_actions, game, args.seed,
                           args.run_flags)
        reference = reference_score(reference_file, game, args.steps) if same_protocol else None
        row = game_result(logdir, game, args.steps, args.final_rounds, reference, scores)
        if not row.get("eval_rounds") and recorded.get(game, {}).get("eval_rounds"):
            # Its logdir is gone (another checkout, a cleaned runs/): the recorded row stays.
            row = dict(recorded[game], logdir_missing=True)
        elif row.get("eval_rounds"):
            draw_game(logdir, row, os.path.join(out_dir, f"{name}-{game}.png"))
        rows.append(row)
    result = {
        "agent": args.agent, "steps": args.steps, "sticky_actions": args.sticky_actions,
        "seed": args.seed, "final_rounds": args.final_rounds, "run_flags": args.run_flags,
        "reference_file": reference_file if same_protocol else None,
        "games": rows,
        "atari5_median_hns": _rounded(rows_atari5_median(rows, args.steps, model)),
        "reference_atari5_median_hns": _rounded(atari5_median(
            {r["game"]: r.get("reference_hns") for r in rows}, model)),
        "atari5_source": model["source"],
    }
    os.makedirs(out_dir, exist_ok=True)
    if any(r.get("eval_rounds") for r in rows):
        draw_suite(result, os.path.join(out_dir, f"{name}.png"))
    with open(result_path(out_dir, args), "w") as f:
        json.dump(result, f, indent=1)
    table = format_table(result)
    with open(os.path.join(out_dir, f"{name}.md"), "w") as f:
        f.write(table + "\n")
    print(table, flush=True)
    return result


def recorded_rows(path: str, args) -> dict[str, dict]:
    """The rows of an earlier result file of the same suite (agent, budget, protocol, seed,
    final rounds), by game; {} when there is none or it is another suite's."""
    try:
        with open(path) as f:
            earlier = json.load(f)
    except (OSError, ValueError):
        return {}
    same = all(earlier.get(k) == getattr(args, k) for k in
               ("agent", "steps", "sticky_actions", "seed", "final_rounds", "run_flags"))
    return {r["game"]: r for r in earlier.get("games", [])} if same else {}


def draw_game(logdir: str, row: dict, out: str) -> None:
    """The game's curves with its reference's score as a point (with its seed band)."""
    references = []
    ref = row.get("reference")
    if ref and ref.get("mean") is not None:
        band = f" ± {ref['std']:g}" if ref.get("std") is not None else ""
        references.append(Reference(
            label=f"{ref.get('label', 'reference')}: {ref['mean']:g}{band}",
            panel="evaluation", steps=(float(ref["agent_steps"]),),
            returns=(float(ref["mean"]),), source=ref.get("source", "")))
    plot.draw([plot.load_run(logdir)], out, references=references)


def draw_suite(result: dict, out: str) -> None:
    """One panel a game: its evaluation rounds (mean and spread of the round's games) and the
    reference's score as a level, dashed when at this budget, dotted when at another."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = result["games"]
    columns = min(3, len(rows))
    lines = math.ceil(len(rows) / columns)
    figure, axes = plt.subplots(lines, columns, figsize=(3.6 * columns, 2.6 * lines), dpi=80,
                                squeeze=False)
    for axis, row in zip(axes.flat, rows):
        rounds = np.array(row.get("eval_rounds") or np.zeros((0, 3)), float)
        if len(rounds):
            steps, mean, std = rounds.T
            axis.plot(steps, mean, label="ours")
            axis.fill_between(steps, mean - std, mean + std, alpha=0.2)
        ref = row.get("reference")
        if ref and ref.get("mean") is not None:
            same = row.get("reference_at_same_steps")
            axis.axhline(ref["mean"], color="black", linewidth=1.2, linestyle="--" if same else ":",
                         label=f"reference at {ref['agent_steps'] / 1e6:g}M steps")
        score = _cell(row.get("final_score"))
        axis.set_title(f"{row['game']}: {score}", fontsize=10)
        axis.set_xlim(0, result["steps"])
        axis.grid(alpha=0.3)
        axis.legend(fontsize=7, loc="best")
    for axis in list(axes.flat)[len(rows):]:
        axis.set_visible(False)
    for axis in axes[-1]:
        axis.set_xlabel("agent steps")
    figure.suptitle(f"{result['agent']}, {result['steps']:,} agent steps, sticky actions "
                    f"{result['sticky_actions']:g}: evaluation rounds (10 games, mean ± std)",
                    fontsize=10)
    figure.tight_layout()
    partial = f"{out}.{os.getpid()}.partial.png"
    figure.savefig(partial)
    plt.close(figure)
    os.replace(partial, out)


def _cell(x, digits: int = 1) -> str:
    return "-" if x is None else f"{x:,.{digits}f}"


def format_table(result: dict) -> str:
    sticky = result["sticky_actions"]
    lines = [
        f"{result['agent']} on Atari, {result['steps']:,} agent steps "
        f"({4 * result['steps']:,} frames), sticky actions {sticky:g}, seed {result['seed']}; "
        f"final score: the mean of the games of the last {result['final_rounds']} evaluation "
        f"rounds (the game's unclipped score; the episodes column counts them)",
        "",
        "| game | status | agent steps | final score (episodes) | reference (same protocol) "
        "| ours / ref | random | human | HNS % | reference HNS % |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in result["games"]:
        ref = r.get("reference")
        if ref:
            band = f" ± {ref['std']:g}" if ref.get("std") is not None else ""
            other = "" if r.get("reference_at_same_steps") else " (other budget)"
            ref_cell = (f"{ref['mean']:g}{band} at {ref['agent_steps']:,}{other}"
                        + (f", {ref['seeds']} seeds" if ref.get("seeds") else ""))
        else:
            ref_cell = "-"
        lines.append(
            f"| {r['game']} | {r.get('status', '-').split(' (')[0]} "
            f"| {_cell(r.get('actor_steps'), 0)} | {_cell(r.get('final_score'))} "
            f"({r.get('final_episodes', 0)}) | {ref_cell} "
            f"| {_cell(r.get('ratio_to_reference'), 2)} | {_cell(r.get('random'))} "
            f"| {_cell(r.get('human'))} | {_cell(r.get('hns'))} "
            f"| {_cell(r.get('reference_hns'))} |")
    lines += ["", f"Atari-5 estimate of the 57-game median HNS: ours "
                  f"{_cell(result['atari5_median_hns'])}%, reference "
                  f"{_cell(result['reference_atari5_median_hns'])}% "
                  f"(needs all of {', '.join(ATARI5_GAMES)} at their budget)"]
    return "\n".join(lines)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # One line, not argparse's usage block.
        print(f"error: {message} (see --help)", file=sys.stderr)
        sys.exit(2)


def make_parser() -> argparse.ArgumentParser:
    parser = _Parser(description=__doc__.splitlines()[0])
    parser.add_argument("--agent", required=True, help="an agent of launch_programs.run")
    parser.add_argument("--games", default=",".join(ATARI5_GAMES + ("Breakout",)),
                        help="comma-separated, as Breakout or atari:Breakout (default: the "
                             "Atari-5 and Breakout)")
    parser.add_argument("--rerun", default="",
                        help="comma-separated games to run again although the result file "
                             "records them as done (their run directory gone)")
    parser.add_argument("--steps", type=int, default=2_500_000,
                        help="agent steps a game (4 frames each)")
    parser.add_argument("--sticky_actions", type=float, default=None,
                        help="default: the agent's reference's protocol")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--final_rounds", type=int, default=2,
                        help="evaluation rounds the final score averages")
    parser.add_argument("--run_flags", default="",
                        help="more flags for each run, as one string (reported in the JSON)")
    parser.add_argument("--logroot", default=os.path.join(ROOT, "runs", "atari_suite"))
    parser.add_argument("--out_dir", default=os.path.join(ROOT, "bench", "results",
                                                          "atari_suite"))
    parser.add_argument("--report_only", action="store_true",
                        help="write the table of what ran, without running anything")
    return parser


def main(argv=None) -> int:
    parser = make_parser()
    args = parser.parse_args(argv)
    try:
        games = check_games(args.games.split(","))
        rerun = check_games(args.rerun.split(",")) if args.rerun else []
        if set(rerun) - set(games):
            raise SuiteError(f"--rerun: {sorted(set(rerun) - set(games))[0]!r} is not one of "
                             f"--games ({','.join(games)}); only a game of the suite can run "
                             f"again")
        if args.steps < 1:
            raise SuiteError(f"--steps: must be >= 1, got {args.steps}")
        if args.final_rounds < 1:
            raise SuiteError(f"--final_rounds: must be >= 1, got {args.final_rounds}")
        if args.sticky_actions is None:
            args.sticky_actions = REFERENCES.get(args.agent, (None, DEFAULT_STICKY))[1]
        if not 0.0 <= args.sticky_actions < 1.0:
            raise SuiteError(f"--sticky_actions: must be in [0, 1), got {args.sticky_actions}")
        run_flags = shlex.split(args.run_flags)
        load_json("atari_scores.json"), load_json("atari5.json")  # Fail before hours of runs.
    except SuiteError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    stop_on_signals()
    result_file = result_path(args.out_dir, args)
    recorded = recorded_rows(result_file, args)
    code = 0
    for i, game in enumerate([] if args.report_only else games):
        logdir = logdir_of(args.logroot, args.agent, args.sticky_actions, game, args.seed,
                           args.run_flags)
        if finished(logdir, args.steps):
            print(f"[suite] {game}: done ({args.steps:,} steps in {logdir})", flush=True)
            continue
        if (not os.path.exists(logdir) and game not in rerun
                and took_budget(recorded.get(game, {}), args.steps)):
            # Its run directory is gone (a fresh checkout) but its result is recorded: running
            # it again would replace that result with a partial one until it finished.
            print(f"[suite] {game}: done (recorded in {result_file}; its run directory is "
                  f"gone; --rerun={game} runs it again)", flush=True)
            continue
        cmd = run_command(args.agent, game, args.steps, args.sticky_actions, args.seed,
                          logdir, run_flags)
        print(f"[suite] {game}: {' '.join(cmd[1:])}", flush=True)
        code = run_resumable(cmd)
        if code:  # Stopped or failed: the games after it wait for the next start.
            break
        if i < len(games) - 1:
            report(args, games, args.out_dir)  # The table so far, after each game.
    report(args, games, args.out_dir)
    return code


if __name__ == "__main__":
    sys.exit(main())
