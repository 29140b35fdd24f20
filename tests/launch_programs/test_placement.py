"""Placement of node kinds on a cluster, planned against fake node lists (no Ray started)."""

from __future__ import annotations

from collections import Counter

import pytest

from launch_programs.placement import (
    PIN_AMOUNT,
    ClusterNode,
    KindPlacement,
    PlacementError,
    parse_pins,
    plan_placement,
)
from launch_programs.ray_launcher import RayConfig

HEAD_ID = "a" * 56
NODES = [
    ClusterNode(HEAD_ID, {"CPU": 0.0, "head": 1.0, "node:127.0.0.1": 1.0, "memory": 1e9}),
    ClusterNode("b" * 56, {"CPU": 2.0, "worker_1": 1.0}),
    ClusterNode("c" * 56, {"CPU": 2.0, "GPU": 1.0, "worker_2": 1.0}),
]
KINDS = Counter({"replay": 1, "counter": 1, "learner": 1, "actor": 2, "evaluator": 1})


def plan(pin: str = "", nodes=NODES, kinds=KINDS, **flags):
    return RayConfig(pin=pin, **flags).plan(kinds, nodes)


def test_pins_parse_into_kinds_and_bad_ones_fail_in_one_line():
    assert parse_pins("") == {}
    assert parse_pins("replay:head, learner:worker_2") == {"replay": "head", "learner": "worker_2"}
    for bad, words in [("replay", "is not KIND:NODE"), ("replay:", "is not KIND:NODE"),
                       (":head", "is not KIND:NODE"), ("replay:a,replay:b", "pinned twice")]:
        with pytest.raises(PlacementError, match=words) as e:
            parse_pins(bad)
        assert "\n" not in str(e.value)
    with pytest.raises(PlacementError, match="--pin"):
        RayConfig(pin="replay")  # The config checks it as it is made, before Ray starts.


def test_a_resource_pin_asks_for_a_sliver_of_the_resource_and_actors_spread():
    placement = plan("replay:head,counter:head")
    assert placement["replay"] == KindPlacement(resource="head")
    assert placement["replay"].ray_options() == {"resources": {"head": PIN_AMOUNT}}
    assert placement["actor"] == KindPlacement(spread=True)
    assert placement["actor"].ray_options() == {"scheduling_strategy": "SPREAD"}
    assert placement["learner"].ray_options() == {}  # Ray's default.
    assert plan(spread_actors=False)["actor"].ray_options() == {}
    pinned_actors = plan("actor:worker_1")["actor"].ray_options()
    assert pinned_actors == {"resources": {"worker_1": PIN_AMOUNT}, "scheduling_strategy": "SPREAD"}


def test_a_node_id_pin_is_a_hard_node_affinity():
    pytest.importorskip("ray")
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    placement = plan(f"replay:{HEAD_ID}")["replay"]
    assert placement == KindPlacement(node_id=HEAD_ID)
    strategy = placement.ray_options()["scheduling_strategy"]
    assert isinstance(strategy, NodeAffinitySchedulingStrategy)
    assert (strategy.node_id, strategy.soft) == (HEAD_ID, False)


@pytest.mark.parametrize("pin, flags, words", [
    ("replay:nowhere", {}, "--pin=replay:nowhere: no live node has a resource or node id "
                           "'nowhere' (custom resources: head, worker_1, worker_2)"),
    ("replay:" + "d" * 56, {}, "no live node has this id"),
    ("inference:head", {}, "this program has no 'inference' nodes; its kinds: actor, counter, "
                           "evaluator, learner, replay"),
    ("", {"learner_gpus": 2.0}, "--learner_gpus=2: no node has 2 GPUs for one learner node "
                                "(GPUs per node: 0, 0, 1)"),
    ("learner:worker_1", {"learner_gpus": 1.0}, "--learner_gpus=1: no node pinned to worker_1 "
                                                "has 1 GPU for one learner node"),
    ("", {"cpus_per_actor": 3.0}, "--cpus_per_actor=3: no node has 3 CPUs for one actor node "
                                  "(CPUs per node: 0, 2, 2)"),
    ("actor:head", {}, "--cpus_per_actor=1: no node pinned to head has 1 CPU for one actor node"),
    ("actor:worker_1", {"cpus_per_actor": 1.5}, "--pin=actor:worker_1: 2 actor nodes x "
                                                "--cpus_per_actor=1.5 need 3 CPUs; the nodes "
                                                "with worker_1 have 2"),
    ("", {"cpus_per_actor": 2.0, "learner_cpus": 1.0},
     "the program reserves 5 CPUs (learner 1 x 1, actor 2 x 2); the cluster has 4"),
])
def test_a_placement_the_cluster_cannot_meet_fails_in_one_line(pin, flags, words):
    with pytest.raises(PlacementError) as e:
        plan(pin, **flags)
    assert words in str(e.value)
    assert "\n" not in str(e.value)


def test_reservations_that_fit_pass_and_the_learner_may_take_the_gpu():
    placement = plan("learner:worker_2", learner_gpus=1.0, learner_cpus=1.0)
    assert placement["learner"] == KindPlacement(resource="worker_2")
    assert set(placement) == set(KINDS)
    # A local Ray (one node, CPUs sized to the program) meets any reservation.
    local = [ClusterNode(HEAD_ID, {"CPU": 6.0})]
    assert set(plan(nodes=local, cpus_per_actor=2.0, learner_cpus=2.0)) == set(KINDS)


def test_only_live_nodes_count():
    nodes = ClusterNode.alive([
        {"NodeID": "x" * 56, "Alive": False, "Resources": {"CPU": 8.0, "head": 1.0}},
        {"NodeID": "y" * 56, "Alive": True, "Resources": {"CPU": 1.0}},
    ])
    assert [n.node_id for n in nodes] == ["y" * 56]
    with pytest.raises(PlacementError, match="custom resources: none"):
        plan_placement({"replay": "head"}, {}, KINDS, nodes)
