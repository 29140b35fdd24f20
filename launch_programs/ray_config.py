"""What a Ray run reserves and where: each node kind's CPUs and threads, the pins, the
placement plan."""

from __future__ import annotations

import dataclasses
from collections import Counter

from agentkit.config import require
from launch_programs.placement import ClusterNode, KindPlacement, parse_pins, plan_placement


@dataclasses.dataclass(frozen=True)
class NodeResources:
    """What one node's process reserves on the cluster, and its TensorFlow thread budget."""

    cpus: float = 0.0
    gpus: float = 0.0
    tf_threads: int = 0  # 0: TensorFlow's default (one thread per core).

    def ray_options(self) -> dict[str, float]:
        return {"num_cpus": self.cpus, "num_gpus": self.gpus}


def threads_for(cpus: float) -> int:
    """The threads of a node reserving `cpus`: at least one, none (the default) for 0."""
    return max(1, int(cpus)) if cpus else 0


@dataclasses.dataclass
class RayConfig:
    """Where the nodes run and what each may use."""

    ray_address: str = ""  # "": start a local Ray on 127.0.0.1; else join it ("auto", "host:6379").
    cpus_per_actor: float = 1.0  # CPUs reserved for each actor node.
    learner_cpus: float = 1.0  # CPUs reserved for the learner node.
    learner_gpus: float = 0.0  # GPUs for the learner node (it goes to a node that has them).
    max_restarts: int = 3  # Restarts of one node's process before the program fails.
    # Node kinds pinned to cluster nodes, KIND:NODE[,KIND:NODE]; NODE is a custom resource of
    # the node (survives the host's loss) or its Ray node id. Example: replay:head.
    pin: str = ""
    spread_actors: bool = True  # Actor nodes spread over the cluster's nodes (Ray's SPREAD).

    def __post_init__(self):
        from agentkit.config import require_finite_floats

        require_finite_floats(self)
        require(self.cpus_per_actor >= 0, "cpus_per_actor", ">= 0", self.cpus_per_actor)
        require(self.learner_cpus >= 0, "learner_cpus", ">= 0", self.learner_cpus)
        require(self.learner_gpus >= 0, "learner_gpus", ">= 0", self.learner_gpus)
        require(self.max_restarts >= 0, "max_restarts", ">= 0", self.max_restarts)
        self.pins()  # A malformed --pin fails here, before Ray starts.

    def pins(self) -> dict[str, str]:
        return parse_pins(self.pin)

    def node_resources(self) -> dict[str, NodeResources]:
        """The flags as a table by node kind. The learner keeps TensorFlow's
        default threads (its large steps use every core it gets); an actor's
        small forward passes run fastest on as many threads as it reserves."""
        return {
            "actor": NodeResources(self.cpus_per_actor, tf_threads=threads_for(self.cpus_per_actor)),
            "learner": NodeResources(self.learner_cpus, self.learner_gpus),
        }

    def resources_for(self, kind: str) -> NodeResources:
        """A node of a kind the table does not list (replay, counter, evaluator, any new
        one) reserves nothing: it runs wherever Ray has room."""
        return self.node_resources().get(kind, NodeResources())

    def plan(self, kinds: Counter, nodes: list[ClusterNode]) -> dict[str, KindPlacement]:
        """Each kind's placement on these live nodes; PlacementError (one line) if unmet."""
        reservations = {kind: (r.cpus, r.gpus) for kind in kinds
                        for r in [self.resources_for(kind)]}
        return plan_placement(self.pins(), reservations, kinds, nodes, self.spread_actors,
                              flags=RESERVATION_FLAGS)


# The flag behind each kind's reservation ("kind_unit"), for placement errors.
RESERVATION_FLAGS = {"actor_cpu": "cpus_per_actor", "learner_cpu": "learner_cpus",
                     "learner_gpu": "learner_gpus"}
