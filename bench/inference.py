"""Acting with local against central inference, the same environments in all, under ray.

For each network (the CartPole MLP, the Atari network on Pong) and each layout
(actors x environments per actor), it runs DQN's acting side twice: each actor with its
own policy (local), and every actor through one inference node that batches their
requests (central, `--inference=central`). The learner is idle (its table's minimum
size is never reached), so the figure is what acting sustains. After a warm-up it
counts environment steps over a window and reads the mean request latency that the
actors saw (transport included) and the rows per policy call at the inference node.
Prints one line per run and writes bench/results/inference.json.

    python bench/inference.py --networks=mlp,atari --layouts=2x8,4x4 --window_s=20
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.acting_only import (  # noqa: E402
    acting_only_program,
    launch_and_watch,
    node,
    steps_per_s,
)
from launch_programs.ray_launcher import RayConfig, RayLauncher  # noqa: E402

NETWORKS = {"mlp": ("gym:CartPole-v1", {}), "atari": ("atari:Pong", {"torso": "atari"})}


def measure(network: str, num_actors: int, envs: int, inference: str, warmup_s: float,
            window_s: float, deadline_ms: float = 2.0) -> dict:
    env, fields = NETWORKS[network]
    program = acting_only_program(
        env, num_actors, envs, agent={"actor_priorities": False, **fields},
        program={"inference": inference, "inference_deadline_ms": deadline_ms})
    launcher = RayLauncher(program, RayConfig(cpus_per_actor=1.0, learner_cpus=0.0))
    result: dict = {"network": network, "env": env, "num_actors": num_actors,
                    "envs_per_actor": envs, "inference": inference}
    if inference == "central":
        result["deadline_ms"] = deadline_ms

    def watch():
        counter = node(launcher, "counter")
        while counter.get_counts().get("actor_steps", 0) == 0:
            time.sleep(0.1)
        time.sleep(warmup_s)
        actors = [launcher.objects[f"actor_{i}"] for i in range(num_actors)]
        central = launcher.objects.get("inference")
        calls, stats = [], []

        def edge():
            calls.append([a.policy_calls() for a in actors])
            stats.append(central.stats() if central is not None else None)

        result["actor_steps_per_s"] = steps_per_s(counter, window_s, edge, edge)
        before, after = calls
        made = sum(a.get("calls", 0) - b.get("calls", 0) for a, b in zip(after, before))
        if made:
            seconds = sum(a["calls"] * a["mean_latency_ms"] - b.get("calls", 0)
                          * b.get("mean_latency_ms", 0.0) for a, b in zip(after, before))
            result["mean_latency_ms"] = round(seconds / made, 2)
        if central is not None:
            first, last = stats
            answered = last["calls"] - first["calls"]
            if answered:
                result["rows_per_call"] = round((last["rows"] - first["rows"]) / answered, 2)

    result["status"] = launch_and_watch(launcher, watch)
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--networks", default="mlp,atari")
    parser.add_argument("--layouts", default="2x8,4x4", help="actors x environments per actor")
    parser.add_argument("--warmup_s", type=float, default=5.0)
    parser.add_argument("--window_s", type=float, default=20.0)
    parser.add_argument("--deadline_ms", type=float, default=2.0,
                        help="--inference_deadline_ms of the central runs")
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results",
                                                      "inference.json"))
    args = parser.parse_args(argv)
    networks = [n for n in args.networks.split(",") if n]
    unknown = sorted(set(networks) - set(NETWORKS))
    if unknown:
        parser.error(f"--networks: unknown {unknown}; allowed: {', '.join(NETWORKS)}")
    try:
        layouts = [tuple(int(x) for x in layout.split("x")) for layout in args.layouts.split(",")]
    except ValueError:
        parser.error(f"--layouts: '{args.layouts}' is not ACTORSxENVS[,ACTORSxENVS]")
    runs = []
    for network in networks:
        for actors, envs in layouts:
            pair = {}
            for inference in ("local", "central"):
                run = measure(network, actors, envs, inference, args.warmup_s, args.window_s,
                              args.deadline_ms)
                pair[inference] = run
                runs.append(run)
                print("[inference] " + " ".join(f"{k}={v}" for k, v in run.items()), flush=True)
            if pair["local"].get("actor_steps_per_s") and pair["central"].get("actor_steps_per_s"):
                pair["central"]["ratio_to_local"] = round(
                    pair["central"]["actor_steps_per_s"] / pair["local"]["actor_steps_per_s"], 3)
    report = {"benchmark": "inference", "launch": "ray", "agent": "dqn (acting only)",
              "warmup_s": args.warmup_s, "window_s": args.window_s, "cpus": os.cpu_count(),
              "python": platform.python_version(), "date": time.strftime("%Y-%m-%d"),
              "runs": runs}
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(report, f, indent=1)
    for run in runs:
        if run["inference"] == "central":
            print(f"[inference] {run['network']} {run['num_actors']}x{run['envs_per_actor']}: "
                  f"central/local {run.get('ratio_to_local')}, latency "
                  f"{run.get('mean_latency_ms')} ms, rows/call {run.get('rows_per_call')}")
    print(f"[inference] -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
