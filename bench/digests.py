"""Digests of an agent's Atari acting and learning, run in one thread: two commits compared.

A learning curve differs from run to run even at one seed (the threads of a program
interleave differently, and the actors' weights arrive at other steps), so two runs
cannot tell whether a change of structure changed a computation. This script takes the
agent's parts from its builder as the program does (the Atari preset's config and layout,
its networks, replay table, adder, policy, actor, dataset and learner) and runs them in
one thread with nothing left to chance: 8 games on Pong (one group of the preset's 16,
sticky actions 0.25, seeds 100-107), the actor on the learner's own networks, 40 batched
steps a round, then learner steps. It records a SHA-256 digest of every batched step
(observations, actions, rewards, step types and the policy's extras: IMPALA's behaviour
logits) and of the weights after every learner step. Equal digests from two checkouts:
they act and learn alike, bit for bit, for these steps.

- impala: one learner step a round (two rollout items: one batch of 16 unrolls of 20);
- dqn: Reverb's samplers draw at random from a seed of their own, so here the table is
  made a queue (each item sampled once, oldest first, from the first item: no rate
  limit) read by one worker (the preset's two interleave by timing), and a round's 320
  transitions feed 8 learner steps of 32.

    cd CHECKOUT_A && python /path/to/bench/digests.py --agent=impala --out=/tmp/a.json
    cd CHECKOUT_B && python /path/to/bench/digests.py --agent=impala --out=/tmp/b.json
    python bench/digests.py --compare /tmp/a.json /tmp/b.json

It imports the agent from the working directory, so that the same script serves any
checkout (with the project installed in editable mode, a module that the checkout lacks
still comes from the installed tree); before issue 37 (commit 8f0e4d9) builders took their
layout from `configure_acting` and made adders with `make_batched_adder`, and both are
handled.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = "atari:Pong"
GAMES = 8  # One group of the preset's 16 games in two groups.
STEPS_PER_ROUND = 40
AGENTS = ("impala", "dqn")


def digest(*arrays) -> str:
    """The first 16 hex digits of the SHA-256 of the arrays' dtypes, shapes and bytes."""
    import numpy as np

    h = hashlib.sha256()
    for a in arrays:
        a = np.ascontiguousarray(np.asarray(a))
        h.update(f"{a.dtype}{a.shape}".encode())
        h.update(a.tobytes())
    return h.hexdigest()[:16]


def _builder_class(agent: str):
    if agent == "impala":
        from agents.impala.builder import IMPALABuilder
        return IMPALABuilder
    _replay_as_queue()
    from agents.dqn.builder import DQNBuilder
    return DQNBuilder


def _replay_as_queue() -> None:
    """Every Reverb table made from here on samples its items once each, oldest first, with
    no rate limit, and every dataset reads it with one worker: what the learner reads no
    longer depends on a sampler's random draws or on which worker was first."""
    import reverb

    class QueueTable(reverb.Table):
        def __init__(self, name, sampler, remover, max_size, rate_limiter,
                     max_times_sampled=0, extensions=(), signature=None):
            del sampler, remover, rate_limiter, max_times_sampled
            super().__init__(name, reverb.selectors.Fifo(), reverb.selectors.Fifo(), max_size,
                             reverb.rate_limiters.MinSize(1), 1, extensions, signature)

    reverb.Table = QueueTable
    from_table_signature = reverb.TrajectoryDataset.from_table_signature

    def one_worker(*args, **kwargs):
        return from_table_signature(*args, **{**kwargs, "num_workers_per_iterator": 1})

    reverb.TrajectoryDataset.from_table_signature = one_worker


def _builder(builder_class, config):
    """The builder of the preset's layout (1 actor x 16 games in 2 groups), either API."""
    if hasattr(builder_class, "configure_acting"):  # Before issue 37's items 1-2.
        builder = builder_class(config)
        builder.configure_acting(num_actors=1, num_envs_per_actor=16, env_groups=2)
        return builder, False
    from agentkit.acting import ActingLayout

    return builder_class(config, layout=ActingLayout(1, 16, 2)), True


def run(agent: str, rounds: int) -> dict:
    """Acts and learns `rounds` rounds (the first acts only: the writer and the sampler hold
    items in flight); returns the digests."""
    import reverb
    import tensorflow as tf

    builder_class = _builder_class(agent)
    from agentkit.specs import make_environment_spec
    from components.environments import make_environment, make_vector_environment

    values = dict(builder_class.preset(ENV))
    if agent == "impala":
        # The preset's values since 254ef7c; given here so that older checkouts run them too.
        values.update(adam_epsilon=9.765625e-10, learning_rate_decay_steps=156_250)
    config = builder_class.config_class(**values)
    builder, layout_api = _builder(builder_class, config)
    # IMPALA: one batch of 16 unrolls a round; DQN: 8 batches of 32 of the round's 320.
    learner_steps = 1 if agent == "impala" else max(
        1, 256 // (config.batch_size * getattr(config, "batches_per_call", 1)))
    environment = make_environment(ENV, seed=0, evaluation=False, sticky_actions=0.25)
    spec = make_environment_spec(environment)
    environment.close()
    tf.random.set_seed(0)
    networks = builder.make_networks(spec=spec)
    variables = [v for network in networks.values() for v in network.trainable_variables]
    record = {"agent": agent, "commit": _commit(),
              "config": {k: repr(v) for k, v in dataclasses.asdict(config).items()},
              "layout_api": layout_api, "init": digest(*[v.numpy() for v in variables]),
              "acting": [], "learning": []}
    kwargs = {}
    try:
        from components.replay.server import NoCheckpointer
        kwargs["checkpointer"] = NoCheckpointer()
    except ImportError:  # Older checkouts: Reverb's default (a folder under /tmp).
        pass
    server = reverb.Server(builder.make_replay_tables(spec=spec), port=None, **kwargs)
    address = f"localhost:{server.port}"
    client = reverb.Client(address)
    if layout_api:
        adder = builder.make_adder(replay_client=client, spec=spec, num_envs=GAMES)
    else:
        adder = builder.make_batched_adder(replay_client=client, spec=spec, num_envs=GAMES)
    policy = builder.make_policy(networks=networks, spec=spec, seed=0)
    actor = builder.make_actor(policy=policy, networks=networks, variable_source=None,
                               **({"adder": adder} if layout_api else {"adders": adder}))
    learner = builder.make_learner(
        networks=networks, spec=spec, replay_address=address,
        iterator=builder.make_dataset_iterator(replay_address=address))
    games = make_vector_environment(ENV, list(range(100, 100 + GAMES)), False,
                                    sticky_actions=0.25)
    try:
        timestep = games.reset()
        actor.observe_first(timestep)
        for r in range(rounds):
            for _ in range(STEPS_PER_ROUND):
                action = actor.select_action(timestep.observation)
                extras = getattr(actor, "_extras", None)  # The behaviour logits.
                logits = [] if extras is None else tf.nest.flatten(extras)
                timestep = games.step(action)
                actor.observe(action, timestep)
                record["acting"].append(digest(timestep.observation, action, timestep.reward,
                                               timestep.step_type, *logits))
            if r > 0:
                for _ in range(learner_steps):
                    learner.step()
                record["learning"].append(digest(*[v.numpy() for v in variables]))
                print(f"[digests] round {r}: acting {record['acting'][-1]}, "
                      f"weights {record['learning'][-1]}", flush=True)
    finally:
        games.close()
        server.stop()
    return record


def _commit() -> str | None:
    """The working directory's commit (the checkout under test), with "+changes" when its
    tracked files differ from it."""
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()
        dirty = subprocess.run(["git", "diff", "--quiet", "HEAD"]).returncode != 0
    except (OSError, subprocess.CalledProcessError):
        return None
    return head + ("+changes" if dirty else "")


def compare(a: dict, b: dict) -> dict:
    """Where two records first differ (None: nowhere they both reach)."""
    result = {"agents": [a.get("agent"), b.get("agent")],
              "commits": [a.get("commit"), b.get("commit")],
              "config_equal": a["config"] == b["config"], "init_equal": a["init"] == b["init"]}
    for key in ("acting", "learning"):
        n = min(len(a[key]), len(b[key]))
        first = next((i for i in range(n) if a[key][i] != b[key][i]), None)
        result[key] = {"compared": n, "first_difference": first}
    result["identical"] = (result["config_equal"] and result["init_equal"]
                           and all(result[k]["first_difference"] is None
                                   for k in ("acting", "learning")))
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agent", default="impala", choices=AGENTS)
    parser.add_argument("--rounds", type=int, default=31,
                        help="rounds of 40 batched steps; each but the first ends with "
                             "learner steps")
    parser.add_argument("--out", default="digests.json")
    parser.add_argument("--compare", nargs=2, metavar="RECORD",
                        help="compare two written records instead of running; the result "
                             "goes to bench/results/digests_<agent>.json")
    args = parser.parse_args(argv)
    if args.compare:
        records = [json.load(open(path)) for path in args.compare]
        result = compare(*records)
        result["steps_per_round"], result["games"] = STEPS_PER_ROUND, GAMES
        print(json.dumps(result))
        path = os.path.join(ROOT, "bench", "results", f"digests_{records[0].get('agent')}.json")
        with open(path, "w") as f:
            json.dump(result, f, indent=1)
        return 0 if result["identical"] else 1
    if args.rounds < 2:
        parser.error("--rounds: at least 2 (the first round only acts)")
    sys.path.insert(0, os.getcwd())  # The checkout under test, not the installed one.
    record = run(args.agent, args.rounds)
    with open(args.out, "w") as f:
        json.dump(record, f, indent=1)
    print(json.dumps({"out": args.out, "steps": len(record["acting"]),
                      "learner_steps": len(record["learning"]),
                      "last_weights": record["learning"][-1]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
