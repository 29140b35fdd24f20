"""DQN's batched actor on K CartPole environments: per-environment n-step adders vs one batched adder.

The actor alone (no learner) writes into a local Reverb table without a rate
limiter, with DQN's Ape-X priorities (one fused priority and policy call per
step). For small observations the adders' Python, not the network or the
simulators, bounds such an actor; the ratio shows what the batched adder
saves. Prints one line per adder kind and writes bench/results/actor_adders.json.

    python bench/actor_adders.py --num_envs=16 --steps=20000
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import reverb  # noqa: E402

from agentkit.environment_loop import EnvironmentLoop  # noqa: E402
from agentkit.specs import make_environment_spec  # noqa: E402
from agents.dqn import DQNBuilder, DQNConfig  # noqa: E402
from components.adders import NStepTransitionAdder, PerEnvironmentAdders  # noqa: E402
from components.environments.batched import BatchedEnvironment  # noqa: E402
from components.environments.registry import make_environment  # noqa: E402
from components.replay import ReplayServer, make_replay_table, transition_signature  # noqa: E402

ENV = "gym:CartPole-v1"


def per_environment_adders(builder: DQNBuilder, spec, client: reverb.Client,
                           num_envs: int) -> PerEnvironmentAdders:
    """The same items from one n-step adder per environment (what DQN's builder made before
    its batched adder): the baseline this benchmark measures the batched one against."""
    c = builder.config
    return PerEnvironmentAdders([
        NStepTransitionAdder(client, builder.table_name, n_step=c.n_step, discount=c.discount,
                             max_in_flight_items=c.max_in_flight_items,
                             defer_items=builder._defer_items,  # As the builder's own adder.
                             extras_spec=builder.extras_spec(spec))
        for _ in range(num_envs)])


def steps_per_s(builder: DQNBuilder, spec, client: reverb.Client, num_envs: int, steps: int,
                batched_adder: bool) -> float:
    networks = builder.make_networks(spec=spec)
    adder = (builder.make_adder(replay_client=client, spec=spec, num_envs=num_envs)
             if batched_adder else per_environment_adders(builder, spec, client, num_envs))
    actor = builder.make_actor(policy=builder.make_policy(networks=networks, spec=spec),
                               networks=networks, adder=adder, variable_source=None)
    envs = BatchedEnvironment([make_environment(ENV, seed=i) for i in range(num_envs)])
    EnvironmentLoop(envs, actor).run(num_steps=2_000)  # Warm-up: traces, first items.
    loop = EnvironmentLoop(envs, actor)
    start = time.perf_counter()
    loop.run(num_steps=steps)
    rate = loop.steps / (time.perf_counter() - start)
    actor.close()
    return rate


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num_envs", type=int, default=16)
    parser.add_argument("--steps", type=int, default=20_000)
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results",
                                                      "actor_adders.json"))
    args = parser.parse_args(argv)
    # time_to_solve's DQN network; adders keep up to 64 items in flight.
    builder = DQNBuilder(DQNConfig(hidden_sizes=(256, 256), head_hidden_size=0,
                                   max_in_flight_items=64))
    spec = make_environment_spec(make_environment(ENV, seed=0))
    table = make_replay_table(builder.table_name, transition_signature(spec), 2_000_000,
                              reverb.rate_limiters.MinSize(1), prioritized=True)
    server = ReplayServer([table])
    try:
        client = reverb.Client(server.address())
        rates = {}
        for kind, batched in (("per_environment", False), ("batched", True)):
            rates[kind] = steps_per_s(builder, spec, client, args.num_envs, args.steps, batched)
            print(f"[actor_adders] {args.num_envs} envs, {kind} adders: {rates[kind]:,.0f} "
                  f"steps/s", flush=True)
    finally:
        server.stop()
    report = {"machine": f"{platform.node()}, {os.cpu_count()} cpus", "env": ENV,
              "num_envs": args.num_envs, "steps": args.steps,
              "steps_per_s": {k: round(v, 1) for k, v in rates.items()},
              "batched_vs_per_environment": round(rates["batched"] / rates["per_environment"], 3)}
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(report, f, indent=1)
    print(f"[actor_adders] batched / per-environment: {report['batched_vs_per_environment']:.2f}x "
          f"-> {args.out}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
