"""Acting throughput under the ray launcher with 1, 2, ... actor processes.

The learner is idle (its table's minimum size is never reached), so this
measures what actor processes and the replay service sustain together. For
each actor count it starts a fresh local Ray (or, with `--nodes=N`, runs on
one multi-node cluster built on this machine: a head holding the replay,
counter and learner, and N worker nodes over which the actors spread), records
the seconds from the launch to the first item in the table, lets the actors
warm up, then counts environment steps over a fixed window. Over the same
window it reads the CPU time of every process under this one (the nodes,
Ray's GCS and raylets, this driver) and reports the cores each kind used:
where the machine's cores went. Prints one line per configuration and
writes bench/results/scaling.json (scaling_cluster.json with --nodes) with
the ratio of each to one actor.

    python bench/scaling.py --actors=1,2 --window_s=20
    python bench/scaling.py --actors=1,2,4 --nodes=2
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from agents.dqn import DQNBuilder  # noqa: E402
from bench.acting_only import (  # noqa: E402
    acting_only_program,
    launch_and_watch,
    node,
    steps_per_s,
)
from launch_programs import processes  # noqa: E402
from launch_programs.ray_launcher import RayConfig, RayLauncher  # noqa: E402

ON_HEAD = "replay:head,counter:head,learner:head"  # With --nodes: only actors on the workers.


def cpu_by_kind(launcher: RayLauncher) -> dict[str, float]:
    """CPU seconds used so far by each kind of process under this one: the program's nodes
    by kind (actor_0 and actor_1 both count as `actors`), Ray's own by what they are."""
    node_of = {}
    for name in launcher.objects:
        try:
            node_of[launcher.node_pid(name)] = "actors" if name.startswith("actor_") else name
        except Exception:  # noqa: BLE001 - a node gone: its CPU is not counted.
            pass
    used: dict[str, float] = {}
    for pid in [os.getpid(), *processes.descendants(os.getpid())]:
        kind = node_of.get(pid) or ("bench" if pid == os.getpid()
                                    else processes.process_kind(processes.command_line(pid)))
        used[kind] = used.get(kind, 0.0) + processes.cpu_seconds(pid)
    return used


def measure(env: str, num_actors: int, envs_per_actor: int, warmup_s: float,
            window_s: float, cluster=None) -> dict:
    program = acting_only_program(env, num_actors, envs_per_actor)
    ray_config = RayConfig(cpus_per_actor=1.0, learner_cpus=0.0)
    if cluster is not None:
        ray_config = RayConfig(ray_address=cluster.address, cpus_per_actor=1.0, learner_cpus=0.0,
                               pin=ON_HEAD)
    launcher = RayLauncher(program, ray_config)
    result: dict = {"num_actors": num_actors, "envs_per_actor": envs_per_actor}
    start = time.time()

    def watch():
        replay = node(launcher, "replay")
        while replay.info()[DQNBuilder.table_name]["num_inserts"] == 0:
            time.sleep(0.05)
        result["start_to_first_item_s"] = round(time.time() - start, 2)
        counter = node(launcher, "counter")
        time.sleep(warmup_s)
        used, ends = [], []

        def edge():
            used.append(cpu_by_kind(launcher))
            ends.append(time.time())

        result["actor_steps_per_s"] = steps_per_s(counter, window_s, edge, edge)
        # Cores each kind kept busy over the window (a process that started inside it counts
        # from its start).
        (c0, c1), seconds = used, ends[1] - ends[0]
        cores = {k: round((c1[k] - c0.get(k, 0.0)) / seconds, 3) for k in sorted(c1)}
        result["cores_used"] = {k: v for k, v in cores.items() if v >= 0.005}
        result["cores_used_total"] = round(sum(result["cores_used"].values()), 3)
        if cluster is not None:  # Which node each actor ran on.
            result["actor_nodes"] = sorted(
                cluster.name_of(launcher.node_location(f"actor_{i}")) for i in range(num_actors))

    result["status"] = launch_and_watch(launcher, watch)
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="gym:CartPole-v1")
    parser.add_argument("--actors", default="1,2", help="comma-separated actor counts")
    parser.add_argument("--envs_per_actor", type=int, default=4)
    parser.add_argument("--warmup_s", type=float, default=5.0)
    parser.add_argument("--window_s", type=float, default=20.0)
    parser.add_argument("--nodes", type=int, default=0,
                        help="0: a local Ray per count; N: a cluster of a head and N worker "
                             "nodes on this machine (launch_programs.local_cluster)")
    parser.add_argument("--out", default=None,
                        help="default: bench/results/scaling.json (scaling_cluster.json with "
                             "--nodes)")
    args = parser.parse_args(argv)
    if args.nodes < 0:
        parser.error(f"--nodes: must be >= 0, got {args.nodes}")
    name = "scaling_cluster.json" if args.nodes else "scaling.json"
    args.out = args.out or os.path.join(os.path.dirname(__file__), "results", name)
    counts = [int(x) for x in args.actors.split(",")]
    cluster = None
    if args.nodes:
        from launch_programs.local_cluster import LocalCluster

        per_node = -(-max(counts) // args.nodes)  # Room for every actor, one CPU each.
        cluster = LocalCluster(workers=args.nodes, cpus_per_node=per_node, head_cpus=0).start()
    runs = []
    try:
        for n in counts:
            run = measure(args.env, n, args.envs_per_actor, args.warmup_s, args.window_s,
                          cluster)
            runs.append(run)
            print(f"[scaling] actors={n} steps/s={run.get('actor_steps_per_s')} "
                  f"start_to_first_item_s={run.get('start_to_first_item_s')} "
                  f"nodes={run.get('actor_nodes', 'local')} cores={run.get('cores_used')}",
                  flush=True)
    finally:
        if cluster is not None:
            cluster.shutdown()
    base = next((r.get("actor_steps_per_s") for r in runs if r["num_actors"] == 1), None)
    for run in runs:
        if base and run.get("actor_steps_per_s"):
            run["ratio_to_one_actor"] = round(run["actor_steps_per_s"] / base, 3)
    report = {
        "benchmark": "scaling", "launch": "ray", "env": args.env,
        "cluster": (f"head (replay, counter, learner) + {args.nodes} worker nodes on this machine"
                    if args.nodes else "local Ray, one node"),
        "envs_per_actor": args.envs_per_actor, "warmup_s": args.warmup_s,
        "window_s": args.window_s, "cpus": os.cpu_count(), "python": platform.python_version(),
        "date": time.strftime("%Y-%m-%d"), "runs": runs,
    }
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(report, f, indent=1)
    summary = " ".join(f"{r['num_actors']}:{r.get('actor_steps_per_s')}/s"
                       f"(x{r.get('ratio_to_one_actor')})" for r in runs)
    print(f"[scaling] {summary} -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
