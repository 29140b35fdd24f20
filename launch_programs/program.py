"""A program: a graph of named nodes, each built from a constructor and handles.

A node's arguments may hold `Handle`s to other nodes; a launcher resolves
each handle to something with the same methods as the node's object (the
object itself in threads, a proxy to another process elsewhere). Nodes talk
only through method calls, so the same graph runs under every launcher.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any


@dataclasses.dataclass(frozen=True)
class Handle:
    """A reference to another node of the program."""

    name: str


@dataclasses.dataclass
class Node:
    """One node: `constructor(*args, **kwargs)` with handles resolved.

    `kind` groups nodes for logs and resources (replay, counter, learner,
    actor, evaluator). The program ends when every node with
    `ends_program=True` has returned from `run()`.
    """

    name: str
    kind: str
    constructor: Callable[..., Any]
    args: tuple = ()
    kwargs: dict = dataclasses.field(default_factory=dict)
    ends_program: bool = False


class Program:
    """An ordered collection of nodes; a node may only use earlier nodes."""

    def __init__(self, name: str):
        self.name = name
        self.nodes: dict[str, Node] = {}

    def add_node(
        self,
        name: str,
        kind: str,
        constructor: Callable[..., Any],
        *args: Any,
        ends_program: bool = False,
        **kwargs: Any,
    ) -> Handle:
        if name in self.nodes:
            raise ValueError(f"node {name!r} already exists")
        for value in list(args) + list(kwargs.values()):
            if isinstance(value, Handle) and value.name not in self.nodes:
                raise ValueError(f"node {name!r} uses {value.name!r}, which is not defined yet")
        self.nodes[name] = Node(name, kind, constructor, args, kwargs, ends_program)
        return Handle(name)

    def resolve(self, node: Node, lookup: Callable[[Handle], Any]) -> tuple[tuple, dict]:
        """Replaces every Handle among a node's arguments with `lookup(handle)`."""
        def one(value):
            return lookup(value) if isinstance(value, Handle) else value

        return tuple(one(a) for a in node.args), {k: one(v) for k, v in node.kwargs.items()}


class NodeError(RuntimeError):
    """A node raised; carries the node's name and formatted traceback."""

    def __init__(self, node: str, error: BaseException, formatted: str):
        super().__init__(f"node {node} failed: {type(error).__name__}: {error}")
        self.node = node
        self.error = error
        self.formatted = formatted


@dataclasses.dataclass
class LaunchResult:
    status: str  # "completed", "interrupted" or "failed".
    objects: dict[str, Any]
    error: NodeError | None = None


def shutdown_despite_interrupts(shutdown: Callable[[], None], attempts: int = 3) -> bool:
    """Runs `shutdown()` to the end even if Ctrl-C lands in the middle of it.

    Stopping nodes is idempotent, so an interrupted shutdown simply starts
    again. Returns whether an interrupt arrived.
    """
    interrupted = False
    for _ in range(attempts):
        try:
            shutdown()
            return interrupted
        except KeyboardInterrupt:
            interrupted = True
    return interrupted
