"""Where the ray launcher puts each kind of node on a cluster, checked before any node starts.

A user pins node kinds to cluster nodes with `--pin=KIND:NODE[,KIND:NODE]`,
where NODE is a custom resource that the node was started with (`ray start
--resources='{"replay_host": 1}'`) or its Ray node id (56 hex digits). A
resource pin survives the loss of its host: the pinned node is rebuilt on any
node that offers the resource, such as the same host when it rejoins. A node-id
pin names one raylet's life, so a node pinned by id dies with it. Actors are
spread over the nodes (Ray's SPREAD strategy) unless `spread_actors` is off.

The plan is checked against the live nodes before the launcher builds any
node: a pin that names nothing, a kind the program lacks, or a reservation
(CPUs, GPUs) that no node or not the whole cluster can hold fails in one line.
Ray itself would leave such a node pending forever.
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

NODE_ID = re.compile(r"[0-9a-f]{56}")
PIN_AMOUNT = 0.001  # Of the pinned resource, per node: a thousand nodes fit on one unit.


class PlacementError(ValueError):
    """A placement the cluster cannot meet (one line naming the flag)."""


@dataclasses.dataclass(frozen=True)
class ClusterNode:
    """One live node of the cluster, as `ray.nodes()` reports it."""

    node_id: str
    resources: Mapping[str, float]

    @property
    def cpus(self) -> float:
        return float(self.resources.get("CPU", 0.0))

    @property
    def gpus(self) -> float:
        return float(self.resources.get("GPU", 0.0))

    @classmethod
    def alive(cls, ray_nodes: Iterable[Mapping[str, Any]]) -> list[ClusterNode]:
        return [cls(n["NodeID"], dict(n.get("Resources", {}))) for n in ray_nodes if n.get("Alive")]


def parse_pins(text: str) -> dict[str, str]:
    """`"replay:replay_host,learner:gpu_host"` as {kind: node}; "" pins nothing."""
    pins: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        kind, sep, node = part.partition(":")
        if not sep or not kind.strip() or not node.strip():
            raise PlacementError(f"--pin: '{part}' is not KIND:NODE (for example replay:head)")
        kind = kind.strip()
        if kind in pins:
            raise PlacementError(f"--pin: kind '{kind}' is pinned twice")
        pins[kind] = node.strip()
    return pins


@dataclasses.dataclass(frozen=True)
class KindPlacement:
    """Where the nodes of one kind go: a resource they need, a node id, or spread."""

    resource: str = ""
    node_id: str = ""
    spread: bool = False

    def ray_options(self) -> dict[str, Any]:
        """The `.options()` of Ray's actor class for this placement (empty: Ray's default)."""
        if self.node_id:
            from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

            return {"scheduling_strategy": NodeAffinitySchedulingStrategy(self.node_id, soft=False)}
        options: dict[str, Any] = {}
        if self.resource:
            options["resources"] = {self.resource: PIN_AMOUNT}
        if self.spread:
            options["scheduling_strategy"] = "SPREAD"
        return options


def _fmt(value: float) -> str:
    return f"{value:g}"


def plan_placement(
    pins: Mapping[str, str],
    reservations: Mapping[str, tuple[float, float]],
    kinds: Counter,
    nodes: list[ClusterNode],
    spread_actors: bool = True,
    flags: Mapping[str, str] | None = None,
) -> dict[str, KindPlacement]:
    """The placement of every node kind in `kinds` (kind -> number of nodes), or one line why not.

    `reservations` maps a kind to the (CPUs, GPUs) each of its nodes reserves;
    `flags` names the flag behind each kind's reservation, for the message.
    """
    flags = flags or {}
    unknown = sorted(set(pins) - set(kinds))
    if unknown:
        raise PlacementError(f"--pin: this program has no '{unknown[0]}' nodes; its kinds: "
                             f"{', '.join(sorted(kinds))}")
    plan: dict[str, KindPlacement] = {}
    for kind in kinds:
        target = pins.get(kind, "")
        eligible = nodes
        placement = KindPlacement(spread=spread_actors and kind == "actor")
        if NODE_ID.fullmatch(target):
            eligible = [n for n in nodes if n.node_id == target]
            if not eligible:
                raise PlacementError(f"--pin={kind}:{target}: no live node has this id")
            placement = KindPlacement(node_id=target)
        elif target:
            eligible = [n for n in nodes if n.resources.get(target, 0.0) > 0]
            if not eligible:
                names = sorted({r for n in nodes for r in n.resources if _custom(r)})
                raise PlacementError(
                    f"--pin={kind}:{target}: no live node has a resource or node id '{target}' "
                    f"(custom resources: {', '.join(names) or 'none'})")
            placement = dataclasses.replace(placement, resource=target)
        cpus, gpus = reservations.get(kind, (0.0, 0.0))
        for amount, unit, have in ((cpus, "CPU", ClusterNode.cpus), (gpus, "GPU", ClusterNode.gpus)):
            if amount and not any(have.fget(n) >= amount for n in eligible):
                flag = flags.get(f"{kind}_{unit.lower()}", f"{kind} {unit}s")
                where = f" pinned to {target}" if target else ""
                per_node = ", ".join(_fmt(have.fget(n)) for n in eligible)
                units = unit if amount == 1 else f"{unit}s"
                raise PlacementError(f"--{flag}={_fmt(amount)}: no node{where} has {_fmt(amount)} "
                                     f"{units} for one {kind} node ({unit}s per node: {per_node})")
        if target and cpus:  # Every node of a pinned kind must fit on its eligible nodes.
            have_cpus = sum(n.cpus for n in eligible)
            if cpus * kinds[kind] > have_cpus + 1e-9:
                flag = flags.get(f"{kind}_cpu", f"{kind} CPUs")
                raise PlacementError(
                    f"--pin={kind}:{target}: {kinds[kind]} {kind} nodes x --{flag}={_fmt(cpus)} "
                    f"need {_fmt(cpus * kinds[kind])} CPUs; the nodes with {target} have "
                    f"{_fmt(have_cpus)}")
        plan[kind] = placement
    for unit, index, have in (("CPU", 0, ClusterNode.cpus), ("GPU", 1, ClusterNode.gpus)):
        needed = sum(reservations.get(k, (0.0, 0.0))[index] * n for k, n in kinds.items())
        total = sum(have.fget(n) for n in nodes)
        if needed > total + 1e-9:
            parts = ", ".join(f"{k} {n} x {_fmt(reservations[k][index])}" for k, n in kinds.items()
                              if reservations.get(k, (0.0, 0.0))[index])
            raise PlacementError(f"the program reserves {_fmt(needed)} {unit}s ({parts}); the "
                                 f"cluster has {_fmt(total)}: lower the reservations or add nodes")
    return plan


def _custom(resource: str) -> bool:
    """Whether a resource name is one a user gave (not Ray's own: CPU, memory, node:<ip> ...)."""
    return (resource not in ("CPU", "GPU", "memory", "object_store_memory")
            and not resource.startswith("node:") and not resource.startswith("accelerator_type:"))
