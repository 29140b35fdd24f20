"""The counter: prefixes, parent aggregation, and exact totals under threads."""

from __future__ import annotations

import threading

from agentkit.counting import Counter


def test_children_prefix_their_counts_in_the_parent():
    root = Counter(initial={"actor_steps": 0, "learner_steps": 0})
    actor, learner = Counter(root, "actor"), Counter(root, "learner")
    actor.increment(steps=5, episodes=1)
    counts = learner.increment(steps=2)
    assert counts == {"actor_steps": 5, "learner_steps": 2, "actor_episodes": 1}
    assert actor.get("steps") == 5
    assert actor.get_counts() == root.get_counts()


def test_totals_are_exact_under_concurrent_increments():
    root = Counter()
    children = [Counter(root, "actor") for _ in range(8)]
    barrier = threading.Barrier(len(children))

    def work(child):
        barrier.wait()
        for _ in range(2_000):
            child.increment(steps=1)

    threads = [threading.Thread(target=work, args=(c,)) for c in children]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert root.get_counts()["actor_steps"] == 16_000


def test_save_and_restore_round_trip():
    root = Counter()
    root.increment(actor_steps=7)
    other = Counter()
    other.restore(root.save())
    assert other.get_counts() == {"actor_steps": 7.0}
