"""Atari Pong acting: steps/s of K bare environments vs an actor with batched inference.

For K = 1, 8, 16, 32 environments in one process, measured in one run:
- `bare`: the K environments stepped with random actions (no network);
- `actor`: the project's batched actor (`DQNConfig.atari()`: Nature CNN,
  dueling head, epsilon-greedy inside one compiled call per step) driving
  the same K environments through `EnvironmentLoop`;
- `actor_alternating`: the same with two alternating groups of K/2, one
  group's simulators stepping while the actor infers for the other.
Both environment backends are measured: the Python one (`atari:Pong`,
gymnasium's AtariPreprocessing, one game after the other) and ale-py's C++
vector environment (`--atari_vector_env`, games stepped in native threads).
The actor runs without replay (no adders), so the figure is acting alone.
Each number is steps over a fixed window after a warm-up; the ratio is
actor / bare of the same backend and K. Where an actor step's CPU goes is
measured too (this process's CPU time, all threads, per step): the bare
simulators', the policy call's timed alone on real observations at the
actor's batch, and the rest ("other": the loop, observing, Python); the
"bound" is simulation / (simulation + inference), the ratio an actor with
nothing else to do would reach on the bare run's cores. The policy's trace count is
recorded: one trace means no retracing, whatever K (a fixed input signature).

Prints one line per measurement, then a one-line summary (the largest K's
best ratio per backend), and writes bench/results/acting.json.

    python bench/acting.py --ks=1,8,16,32 --window_s=5
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from agentkit.environment_loop import EnvironmentLoop  # noqa: E402
from agentkit.specs import make_environment_spec  # noqa: E402
from agents.dqn import DQNBuilder, DQNConfig  # noqa: E402
from components.environments import (  # noqa: E402
    BatchedEnvironment,
    make_environment,
    make_vector_environment,
)
from launch_programs.devices import configure_tensorflow  # noqa: E402

GAME = "atari:Pong"


def make_group(backend: str, seeds: list[int]):
    if backend == "vector":
        return make_vector_environment(GAME, seeds)
    return BatchedEnvironment([make_environment(GAME, seed=s) for s in seeds])


def bare_steps_per_s(backend: str, k: int, window_s: float,
                     warmup_steps: int) -> tuple[float, float]:
    """(steps/s, CPU seconds of this process, all its threads, per step)."""
    env = make_group(backend, list(range(k)))
    rng = np.random.default_rng(0)
    num_actions = env.action_spec().num_values
    try:
        env.reset()
        for _ in range(warmup_steps):
            env.step(rng.integers(0, num_actions, k))
        start, cpu, steps = time.perf_counter(), time.process_time(), 0
        while time.perf_counter() - start < window_s:
            env.step(rng.integers(0, num_actions, k))
            steps += k
        return steps / (time.perf_counter() - start), (time.process_time() - cpu) / steps
    finally:
        env.close()


class _Window:
    """should_stop for a loop: warm up for some steps, then measure for a window."""

    def __init__(self, warmup_steps: int, window_s: float):
        self.warmup_steps, self.window_s = warmup_steps, window_s
        self.start = self.start_steps = self.start_cpu = None
        self.rate = self.cpu_per_step = 0.0

    def __call__(self, counts) -> bool:
        steps = counts.get("actor_steps", 0)
        if self.start is None:
            if steps >= self.warmup_steps:
                self.start, self.start_steps = time.perf_counter(), steps
                self.start_cpu = time.process_time()
            return False
        elapsed = time.perf_counter() - self.start
        if elapsed < self.window_s:
            return False
        self.rate = (steps - self.start_steps) / elapsed
        self.cpu_per_step = (time.process_time() - self.start_cpu) / (steps - self.start_steps)
        return True


def policy_cpu_per_step(builder, networks, spec, backend: str, batch: int,
                        window_s: float) -> float:
    """CPU seconds per environment step of the policy call alone (one call per `batch` steps)
    on real Pong observations: what inference costs, with no simulator running."""
    environment = make_group(backend, list(range(batch)))
    try:
        observation = environment.reset().observation
    finally:
        environment.close()
    policy = builder.make_policy(networks=networks, spec=spec, seed=0)
    for _ in range(10):
        policy(observation)
    start, cpu, calls = time.perf_counter(), time.process_time(), 0
    while time.perf_counter() - start < window_s:
        np.asarray(policy(observation))
        calls += 1
    return (time.process_time() - cpu) / (calls * batch)


def actor_steps_per_s(backend: str, k: int, groups: int, builder, networks, spec,
                      window_s: float, warmup_steps: int) -> tuple[float, int, float]:
    from agentkit.counting import Counter

    policy = builder.make_policy(networks=networks, spec=spec, seed=0)
    size = k // groups
    environments = [make_group(backend, list(range(g * size, (g + 1) * size)))
                    for g in range(groups)]
    actors = [builder.make_actor(policy=policy, networks=networks, adder=None,
                                 variable_source=None) for _ in range(groups)]
    window = _Window(warmup_steps * k, window_s)
    loop = EnvironmentLoop(environments, actors, counter=Counter(prefix="actor"),
                                  should_stop=window, count_every=k)
    try:
        loop.run()
    finally:
        for env in environments:
            env.close()
    return window.rate, policy.num_traces, window.cpu_per_step


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ks", default="1,8,16,32")
    parser.add_argument("--backends", default="python,vector")
    parser.add_argument("--window_s", type=float, default=5.0)
    parser.add_argument("--warmup_steps", type=int, default=20, help="batched steps")
    parser.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                      "results", "acting.json"))
    args = parser.parse_args(argv)
    configure_tensorflow()  # GPU memory growth where there is a GPU.
    device = ", ".join(d.name for d in tf.config.list_physical_devices("GPU")) or "cpu"
    config = DQNConfig.atari()
    builder = DQNBuilder(config)
    spec = make_environment_spec(make_environment(GAME, seed=0))
    networks = builder.make_networks(spec=spec)
    report = {"machine": f"{platform.node()}, {os.cpu_count()} cpus", "device": device,
              "game": GAME,
              "network": "Nature CNN + dueling head (DQNConfig.atari())",
              "window_s": args.window_s, "results": []}
    for backend in args.backends.split(","):
        for k in [int(x) for x in args.ks.split(",")]:
            bare, bare_cpu = bare_steps_per_s(backend, k, args.window_s, args.warmup_steps)
            row = {"backend": backend, "k": k, "bare_steps_per_s": round(bare, 1),
                   "bare_cpu_us_per_step": round(bare_cpu * 1e6, 1),
                   "bare_cores": round(bare * bare_cpu, 2)}
            for groups, key in ((1, "actor"), (2, "actor_alternating")):
                if k % groups:
                    continue
                rate, traces, cpu = actor_steps_per_s(backend, k, groups, builder, networks,
                                                      spec, args.window_s, args.warmup_steps)
                row[f"{key}_steps_per_s"] = round(rate, 1)
                row[f"{key}_ratio"] = round(rate / bare, 3)
                row[f"{key}_policy_traces"] = traces
                row[f"{key}_cpu_us_per_step"] = round(cpu * 1e6, 1)
                row[f"{key}_cores"] = round(rate * cpu, 2)
                # Where an actor step's CPU goes: the simulators (as bare), the policy call
                # (timed alone at this batch), and the rest (the loop, observe, Python).
                inference = policy_cpu_per_step(builder, networks, spec, backend, k // groups,
                                                 min(args.window_s, 3.0))
                row[f"{key}_policy_cpu_us_per_step"] = round(inference * 1e6, 1)
                row[f"{key}_other_cpu_us_per_step"] = round((cpu - bare_cpu - inference) * 1e6,
                                                             1)
                # The ratio if the actor's cores were the bare run's and held nothing but
                # simulation and inference: simulation / (simulation + inference).
                row[f"{key}_bound_ratio"] = round(bare_cpu / (bare_cpu + inference), 3)
            report["results"].append(row)
            print(f"[acting] {backend:6s} K={k:2d}: bare {bare:7.1f}/s, actor "
                  f"{row['actor_steps_per_s']:7.1f}/s ({row['actor_ratio']:.0%})"
                  + (f", alternating {row['actor_alternating_steps_per_s']:7.1f}/s "
                     f"({row['actor_alternating_ratio']:.0%})" if k % 2 == 0 else "")
                  + f"; CPU us/step: bare {row['bare_cpu_us_per_step']:.0f} "
                  f"({row['bare_cores']:.2f} cores)"
                  + "".join(f"; {key}: policy alone {row[f'{key}_policy_cpu_us_per_step']:.0f}, "
                            f"other {row[f'{key}_other_cpu_us_per_step']:.0f}, bound "
                            f"{row[f'{key}_bound_ratio']:.0%}"
                            for key in ("actor", "actor_alternating") if f"{key}_ratio" in row),
                  flush=True)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(report, f, indent=1)
    largest = max(r["k"] for r in report["results"])
    best = {r["backend"]: max(r.get("actor_ratio", 0), r.get("actor_alternating_ratio", 0))
            for r in report["results"] if r["k"] == largest}
    print(f"[acting] summary: at K={largest} the actor reaches "
          + ", ".join(f"{ratio:.0%} ({backend})" for backend, ratio in best.items())
          + f" of the bare environments' steps/s -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
