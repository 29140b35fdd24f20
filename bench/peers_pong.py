"""Wall-clock to a mean of 18 on Pong: our PPO preset beside rl_games (EnvPool) and CleanRL's
EnvPool PPO, one after the other on this machine.

Each peer runs from PyPI at pinned versions in a virtual environment of its own (made on
first use), with its own published Pong settings:

- rl_games 1.6.5 with EnvPool: its `configs/atari/ppo_pong_envpool.yaml` (64 games x 128
  steps, minibatches of 2,048, 4 epochs, a KL-adaptive rate; the Nature CNN with 512 units),
  driven by bench/rl_games_pong.py on the CPU;
- CleanRL's `ppo_atari_envpool.py` with its defaults (8 games x 128 steps, 4 minibatches, 4
  epochs, a rate annealed over its 10M agent steps), the file taken at run time from the
  pinned cleanrl wheel on PyPI (never committed), with EnvPool and gym at the versions its
  old gym API needs;
- ours: `python -m launch_programs.run --agent=ppo --env=atari:Pong --sticky_actions=0`, the
  preset a user gets (its evaluation rounds included in its wall-clock);
- ours_ray, the scaling case: the same preset with `--launch=ray --num_actors=2
  --num_envs_per_actor=32` (two actor processes, the same 64 games). rl_games' own
  multi-process mode is multi-GPU over NCCL (its a2c_common.py), which a CPU machine cannot
  run, and CleanRL's EnvPool PPO has none: their parallelism is EnvPool's thread pool,
  which their runs above use.

One statistic for all (like for like): the mean of the last 100 finished training
games (rl_games' own score window), each a full game's unclipped score, read as each game
ends from the peer's own output (ours: actor.csv). A run stops at the first such mean >= the
target, or at --max_steps agent steps, or --max_minutes. Wall-clock counts from the
command's start (imports, compilation and start-up included) to the moment the game that
made the mean was reported. Each run's own report is kept beside it: CleanRL's mean of its
last 20 games, our first evaluation round (10 games) >= the target.

Writes bench/results/peers_pong.json: for each, agent steps and wall-clock to the target,
agent steps per second, CPU seconds used, the protocol (sticky actions, episodic life, noop
starts, action set, what its returns count), and ours over each peer's wall-clock.

    python bench/peers_pong.py                       # all four, nothing else running
    python bench/peers_pong.py --runs=ours,rl_games --max_minutes=40
    python bench/peers_pong.py --runs=ours --our_flags=--max_policy_lag=1 --out=/tmp/lag1.json
"""

from __future__ import annotations

import argparse
import collections
import csv
import dataclasses
import hashlib
import json
import os
import platform
import re
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
import zipfile
from collections.abc import Iterator

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from tests.commands import user_env  # noqa: E402  (a shell's environment, as tests run commands)

OUT = os.path.join(ROOT, "bench", "results", "peers_pong.json")
TARGET = 18.0
WINDOW = 100  # Finished games the like-for-like mean spans: rl_games' own games_to_track.
CLEANRL_WHEEL = "cleanrl==1.2.0"  # Its wheel holds cleanrl/ppo_atari_envpool.py.
CLEANRL_SCRIPT = "cleanrl/ppo_atari_envpool.py"
TORCH = "torch==2.13.0"  # The CPU build (a newer pin takes a CUDA build of several GB).


@dataclasses.dataclass(frozen=True)
class Peer:
    """A run of the benchmark: where it is installed, and the protocol its figures use."""

    name: str
    venv: str  # Under ROOT.
    packages: tuple[str, ...]
    check: str  # Python that imports what it needs: the venv is made again when it fails.
    own_window: int | None  # The games its own printed mean spans (None: evaluation rounds).
    protocol: dict
    launch_flags: tuple[str, ...] = ()  # Ours: how it is launched (threads by default).

    @property
    def ours(self) -> bool:
        return self.venv == ".venv"


COMMON_PROTOCOL = {"sticky_actions": 0.0, "frame_skip": 4, "noop_max": 30,
                   "max_episode_agent_steps": 27_000, "action_set": "minimal (6 for Pong)"}
OUR_PROTOCOL = COMMON_PROTOCOL | {
    "episodic_life": "a lost life ends the bootstrap, not the game (the preset's "
                     "--atari_life_loss); Pong has no lives, so it changes nothing here",
    "fire_reset": False,
    "returns_count": "full games, unclipped (actor.csv; Pong's rewards are +-1, so the "
                     "clipped sum it learns from is the same)"}
PEERS = {
    "ours": Peer("ours", ".venv", (), "import agentkit", None, OUR_PROTOCOL,
                 ("--launch=threads",)),
    # The scaling case: two actor processes of 32 games each under Ray (the same 64 games and
    # rounds of 8,192 steps), the learner in a third.
    "ours_ray": Peer("ours_ray", ".venv", (), "import agentkit", None, OUR_PROTOCOL,
                     ("--launch=ray", "--num_actors=2", "--num_envs_per_actor=32")),
    "rl_games": Peer("rl_games", ".venv-rlgames",
                     (TORCH, "rl-games==1.6.5", "envpool==1.2.5", "numpy<2"),
                     "import rl_games, envpool, torch", WINDOW, COMMON_PROTOCOL | {
                         "episodic_life": False, "fire_reset": True,
                         "returns_count": "full games, unclipped (EnvPool's raw reward; its "
                                          "reward shaper clips only what it learns from)"}),
    "cleanrl": Peer("cleanrl", ".venv-cleanrl",
                    (TORCH, "envpool==0.8.4", "gym==0.23.1", "numpy<2", "tensorboard"),
                    "import envpool, gym, torch, torch.utils.tensorboard", 20,
                    COMMON_PROTOCOL | {
                        "episodic_life": True, "fire_reset": True,
                        "returns_count": "full games, unclipped (it sums info['reward'], the "
                                         "raw reward, over lives; Pong has no lives, so "
                                         "episodic life changes nothing here)"}),
}


class BenchError(Exception):
    """A setup or argument failure: one line, exit code 2."""


def ensure_venv(peer: Peer) -> str:
    """The peer's Python, its virtual environment made and installed on first use."""
    python = os.path.join(ROOT, peer.venv, "bin", "python")
    if peer.ours:
        if not os.path.exists(python):
            raise BenchError(f"{python} is missing: `make .venv/.installed` makes it")
        return python
    if not os.path.exists(python):
        subprocess.run([sys.executable, "-m", "venv", os.path.join(ROOT, peer.venv)],
                       check=True)
    if subprocess.run([python, "-c", peer.check], capture_output=True).returncode:
        print(f"[peers_pong] installing {peer.name}: {' '.join(peer.packages)}", flush=True)
        done = subprocess.run([python, "-m", "pip", "install", "-q", *peer.packages],
                              capture_output=True, text=True)
        if done.returncode:
            raise BenchError(f"{peer.name}: pip install failed: "
                             f"{done.stderr.strip().splitlines()[-1:]}")
    return python


def fetch_cleanrl_script(python: str, workdir: str) -> tuple[str, str]:
    """CleanRL's script, taken from its pinned wheel on PyPI into `workdir`; its path and the
    wheel's sha256. The wheel declares Python < 3.11; only its file is used, not installed."""
    wheels = os.path.join(workdir, "wheel")
    done = subprocess.run([python, "-m", "pip", "download", "-q", "--no-deps",
                           "--only-binary=:all:", "--python-version", "3.10", "-d", wheels,
                           CLEANRL_WHEEL], capture_output=True, text=True)
    found = os.listdir(wheels) if os.path.isdir(wheels) else []
    if done.returncode or len(found) != 1:
        raise BenchError(f"cleanrl: cannot download {CLEANRL_WHEEL}: "
                         f"{done.stderr.strip().splitlines()[-1:]}")
    wheel = os.path.join(wheels, found[0])
    with open(wheel, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    with zipfile.ZipFile(wheel) as z:
        script = z.extract(CLEANRL_SCRIPT, workdir)
    return script, digest


class GameWindow:
    """The running mean of the last `size` finished games, and the first time it reached a
    target with a full window."""

    def __init__(self, size: int, target: float):
        self.size, self.target = size, target
        self.games: collections.deque[float] = collections.deque(maxlen=size)
        self.count = 0
        self.reached: dict | None = None
        self.curve: list[tuple[float, int, float]] = []  # (wall s, agent steps, mean) a game.

    def add(self, wall_s: float, agent_steps: int, game_return: float) -> None:
        self.games.append(game_return)
        self.count += 1
        mean = sum(self.games) / len(self.games)
        if self.count % 10 == 0 or len(self.games) == self.size and mean >= self.target:
            self.curve.append((round(wall_s, 1), agent_steps, round(mean, 2)))
        if self.reached is None and len(self.games) == self.size and mean >= self.target:
            self.reached = {"wall_time_s": round(wall_s, 1), "agent_steps": agent_steps,
                            "mean": round(mean, 2), "games_so_far": self.count}


CLEANRL_GAME = re.compile(r"global_step=(\d+), episodic_return=\[?(-?[\d.]+(?:e[-+]?\d+)?)\]?")


def game_of_line(name: str, line: str) -> tuple[int, float] | None:
    """(agent steps, full-game return) if a peer's output line reports a finished game."""
    if name == "cleanrl":
        match = CLEANRL_GAME.match(line.strip())
        return (int(match.group(1)), float(match.group(2))) if match else None
    if name == "rl_games" and line.startswith('{"agent_steps"'):
        row = json.loads(line)
        return int(row["agent_steps"]), float(row["game_return"])
    return None


class CsvTail:
    """The rows appended to a CSV file since the last call (a file that grows as it runs)."""

    def __init__(self, path: str):
        self.path, self.offset, self.header = path, 0, None

    def rows(self) -> Iterator[dict[str, str]]:
        if not os.path.exists(self.path):
            return
        with open(self.path, newline="") as f:
            f.seek(self.offset)
            while True:
                line = f.readline()
                if not line.endswith("\n"):  # Not yet written whole: read it next time.
                    break
                self.offset = f.tell()
                values = next(csv.reader([line]))
                if self.header is None:
                    self.header = values
                elif len(values) == len(self.header):
                    yield dict(zip(self.header, values))


def command_of(peer: Peer, python: str, workdir: str, seed: int, max_steps: int,
               our_flags: tuple[str, ...] = ()) -> tuple[list[str], dict]:
    """The peer's command line, and what to record of where its code came from."""
    if peer.ours:
        # The budget only stops it: the preset's rate is KL-steered, not annealed over it.
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True,
                                text=True).stdout.strip()
        return [python, "-m", "launch_programs.run", "--agent=ppo", "--env=atari:Pong",
                "--sticky_actions=0", *peer.launch_flags, f"--seed={seed}",
                f"--max_actor_steps={max_steps}", f"--logdir={os.path.join(workdir, 'run')}",
                "--print_every_s=60", *our_flags], {"commit": commit}
    if peer.name == "rl_games":
        return [python, os.path.join(ROOT, "bench", "rl_games_pong.py"), f"--seed={seed}",
                f"--train_dir={os.path.join(workdir, 'train')}"], {}
    script, digest = fetch_cleanrl_script(python, workdir)
    # Its defaults (total 10M agent steps sets its annealing); it stops at our budget.
    return [python, script, f"--seed={seed}"], {"cleanrl_wheel_sha256": digest}


def run_peer(peer: Peer, args, workdir: str) -> dict:
    """One run to the target (or a budget), watched as it goes; its figures."""
    python = ensure_venv(peer)
    cmd, extra = command_of(peer, python, workdir, args.seed, args.max_steps,
                            tuple(args.our_flags.split()))
    window = GameWindow(WINDOW, args.target)
    own = GameWindow(peer.own_window, args.target) if peer.own_window else None
    log_path = os.path.join(workdir, "output.log")
    lock, last_steps = threading.Lock(), [0]
    usage_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=workdir, env=user_env(PYTHONUNBUFFERED="1"),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)

    def read_output() -> None:
        with open(log_path, "w", buffering=1) as log:  # Line by line: watchable as it runs.
            for line in proc.stdout:
                log.write(line)
                game = game_of_line(peer.name, line)
                if game:
                    with lock:
                        wall = time.monotonic() - start
                        last_steps[0] = max(last_steps[0], game[0])
                        for w in (window, own):
                            if w:
                                w.add(wall, *game)

    reader = threading.Thread(target=read_output, daemon=True)
    reader.start()
    actor_rows = CsvTail(os.path.join(workdir, "run", "actor.csv"))
    eval_rows = CsvTail(os.path.join(workdir, "run", "evaluator.csv"))
    # A row about each second: the steps go on being read while no game ends (the 64 games
    # of a run's start end together, minutes apart).
    learner_rows = CsvTail(os.path.join(workdir, "run", "learner.csv"))
    rounds: dict[int, list[float]] = {}
    first_round = None
    stopped_by = "exited"
    while proc.poll() is None:
        time.sleep(1.0)
        wall = time.monotonic() - start
        with lock:
            if peer.ours:
                for row in actor_rows.rows():
                    last_steps[0] = max(last_steps[0], int(float(row["actor_steps"])))
                    if row.get("episode_return", "") != "":
                        window.add(wall, int(float(row["actor_steps"])),
                                   float(row["episode_return"]))
                for row in learner_rows.rows():
                    last_steps[0] = max(last_steps[0], int(float(row["actor_steps"])))
                for row in eval_rows.rows():
                    games = rounds.setdefault(int(float(row["actor_steps"])), [])
                    games.append(float(row["episode_return"]))
                    if (first_round is None and len(games) == 10
                            and sum(games) / 10 >= args.target):
                        first_round = {"wall_time_s": round(wall, 1),
                                       "agent_steps": int(float(row["actor_steps"])),
                                       "mean": round(sum(games) / 10, 2)}
            if window.reached:
                stopped_by = "target"
            elif last_steps[0] >= args.max_steps:
                stopped_by = "max_steps"
            elif wall >= 60 * args.max_minutes:
                stopped_by = "max_minutes"
            else:
                continue
        stop(proc, graceful=peer.ours)
        break
    proc.wait()
    reader.join(timeout=30)
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = time.monotonic() - start
    reached = window.reached
    result = {
        "command": " ".join(cmd).replace(workdir, "WORKDIR").replace(ROOT + "/", ""),
        "packages": list(peer.packages), "protocol": peer.protocol, **extra,
        "target": args.target, "window_games": WINDOW, "reached": reached is not None,
        "wall_time_s_to_target": reached and reached["wall_time_s"],
        "agent_steps_to_target": reached and reached["agent_steps"],
        "agent_steps_per_s": reached and round(reached["agent_steps"] / reached["wall_time_s"], 1),
        "stopped_by": stopped_by, "exit_code": proc.returncode,
        "run_wall_time_s": round(wall, 1), "run_agent_steps": last_steps[0],
        "games": window.count,
        "cpu_seconds": round(usage.ru_utime + usage.ru_stime
                             - usage_before.ru_utime - usage_before.ru_stime, 1),
        "curve": window.curve,
    }
    if own:
        result["own_report"] = {"what": f"mean of its last {peer.own_window} games",
                                "first_at_target": own.reached}
    if peer.name == "rl_games":
        result["timing_split"] = rl_games_split(log_path)
    if peer.ours:
        result["own_report"] = {"what": "first evaluation round (10 games, sampled policy)",
                                "first_at_target": first_round}
        summary = os.path.join(workdir, "run", "summary.json")
        if os.path.exists(summary):
            summary = json.load(open(summary))
            result["config"] = summary.get("config")
            result["run_agent_steps"] = max(last_steps[0], int(summary.get("actor_steps", 0)))
        if "--launch=ray" in peer.launch_flags:  # Ray's workers are not the run's children.
            result["cpu_seconds"] = None
            result["cpu_seconds_note"] = ("not measured: Ray's worker processes are not waited "
                                          "for by the run, so their CPU is not its children's")
    return result


RL_GAMES_FPS = re.compile(r"fps step: ([\d.]+) fps step and policy inference: ([\d.]+) "
                          r"fps total: ([\d.]+)")


def rl_games_split(log_path: str, skip: int = 3) -> dict | None:
    """Where an agent step of rl_games goes, from its own per-epoch timing lines: the
    simulators alone (`fps step`), with the policy (`fps step and policy inference`), and
    everything (`fps total`, its learning included), as the median over its epochs after the
    first `skip`; microseconds an agent step."""
    if not os.path.exists(log_path):
        return None
    rows = [tuple(map(float, m.groups())) for m in map(RL_GAMES_FPS.search, open(log_path))
            if m][skip:]
    if not rows:
        return None

    env, with_policy, total = (statistics.median_high([r[i] for r in rows]) for i in range(3))
    return {"epochs": len(rows), "agent_steps_per_s": total,
            "us_per_agent_step": {"env stepping": round(1e6 / env, 1),
                                  "inference": round(1e6 / with_policy - 1e6 / env, 1),
                                  "learning and the rest": round(1e6 / total - 1e6 / with_policy,
                                                                 1)}}


def stop(proc: subprocess.Popen, graceful: bool) -> None:
    """Ends a run and everything it started: Ctrl-C first for ours (it writes its summary),
    then SIGTERM, then SIGKILL to the process group."""
    for signum, wait_s in ([(signal.SIGINT, 120)] if graceful else []) + [
            (signal.SIGTERM, 20), (signal.SIGKILL, 10)]:
        try:
            os.killpg(proc.pid, signum)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait_s)
            return
        except subprocess.TimeoutExpired:
            continue


def plan_of(names: list[str], args) -> list[dict]:
    """What each run would install and run, in order, without installing or running it."""
    plan = []
    for name in names:
        peer = PEERS[name]
        if name == "cleanrl":  # Its script is known only once the wheel is downloaded.
            cmd = ["python", f"{CLEANRL_SCRIPT} (from the {CLEANRL_WHEEL} wheel)",
                   f"--seed={args.seed}"]
        else:
            cmd, _ = command_of(peer, "python", "WORKDIR", args.seed, args.max_steps,
                                tuple(args.our_flags.split()))
        plan.append({"name": name, "venv": peer.venv, "packages": list(peer.packages),
                     "command": " ".join(cmd).replace(ROOT + "/", ""),
                     "protocol": peer.protocol,
                     "stops_at": {"target": args.target, "window_games": WINDOW,
                                  "max_steps": args.max_steps,
                                  "max_minutes": args.max_minutes}})
    return plan


def wall_clock_ratios(results: dict) -> tuple[dict, dict]:
    """Ours over each peer's wall-clock to the target; and, for a peer a budget stopped short
    of it, the bound its run gives (its time to the target is longer than its whole run)."""
    ours = results.get("ours", {}).get("wall_time_s_to_target")
    ratios, bounds = {}, {}
    for name, r in results.items():
        if name.startswith("ours") or not ours:
            continue
        if r["wall_time_s_to_target"]:
            ratios[name] = round(ours / r["wall_time_s_to_target"], 3)
        elif r["stopped_by"] in ("max_steps", "max_minutes"):
            bounds[name] = round(ours / r["run_wall_time_s"], 3)
    return ratios, bounds


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def parse_runs(text: str) -> list[str]:
    names = [n for n in text.split(",") if n]
    unknown = [n for n in names if n not in PEERS]
    if unknown or not names:
        raise BenchError(f"--runs: unknown run {unknown[0] if unknown else text!r}; "
                         f"choose from {','.join(PEERS)}")
    return names


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", default=",".join(PEERS), help="comma-separated, in order")
    parser.add_argument("--target", type=float, default=TARGET)
    parser.add_argument("--max_steps", type=int, default=3_000_000,
                        help="agent steps a run may take before it stops short of the target")
    parser.add_argument("--max_minutes", type=float, default=90.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--load", default="nothing else running",
                        help="what else ran on the machine, written beside the figures")
    parser.add_argument("--out", default=OUT)
    parser.add_argument("--keep", default=os.path.join(ROOT, "runs", "peers_pong"),
                        help="where each run's files and output stay")
    parser.add_argument("--our_flags", default="",
                        help="flags added to our runs' command, space-separated (a variant "
                             "such as --max_policy_lag=1; with --out, not to replace the "
                             "preset's figures)")
    parser.add_argument("--plan", action="store_true",
                        help="print what each run installs and runs, as JSON, and stop")
    args = parser.parse_args(argv)
    try:
        names = parse_runs(args.runs)
        if args.max_steps < 1 or args.max_minutes <= 0:
            raise BenchError("--max_steps and --max_minutes must be > 0")
        if args.our_flags and os.path.abspath(args.out) == OUT:
            raise BenchError("--our_flags: give --out too (a variant's figures are not the "
                             "preset's)")
        if args.plan:
            print(json.dumps(plan_of(names, args), indent=1))
            return 0
        results = {}
        for name in names:
            workdir = os.path.join(args.keep, name)
            shutil.rmtree(workdir, ignore_errors=True)
            os.makedirs(workdir)
            print(f"[peers_pong] {name}: running", flush=True)
            results[name] = run_peer(PEERS[name], args, workdir)
            r = results[name]
            print(f"[peers_pong] {name}: {'reached' if r['reached'] else 'did not reach'} "
                  f"{args.target} (mean of {WINDOW} games) "
                  f"at {r['agent_steps_to_target']} agent steps, {r['wall_time_s_to_target']} s;"
                  f" stopped by {r['stopped_by']}", flush=True)
    except BenchError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    ratios, bounds = wall_clock_ratios(results)
    report = {"benchmark": "peers_pong", "env": "Pong, no sticky actions",
              "statistic": f"mean of the last {WINDOW} finished training games, full games "
                           f"unclipped, >= {args.target}; wall-clock from the command's start",
              "seed": args.seed, "runs": results,
              "ours_over_peer_wall_clock": ratios,
              "ours_over_peer_wall_clock_at_most": bounds,
              "machine": f"{cpu_model()}, {os.cpu_count()} cpus", "load": args.load,
              "date": time.strftime("%Y-%m-%d")}
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(report, f, indent=1)
    print(json.dumps({"ours_over_peer_wall_clock": ratios,
                      "ours_over_peer_wall_clock_at_most": bounds}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
